// A Mixture-of-Experts feed-forward layer on vkgmm, all of it on the device, in one command buffer with
// one submit and no host read until the layer's output:
//   logits = x @ router                  gmm, one group holding every token (a plain matmul)
//   ids, weights = top_k(logits)         TopKPlan: softmax, top-k, renormalise
//   h = swiglu(x @ up[e] + bias[e])      gmm routed by ids: lhs rows gathered per slot, bias + SwiGLU fused
//   y = sum_j weight * (h @ down[e])     gmm routed by ids, per-slot lhs, combined in token order
// The dispatches and barriers are listed in examples/moe_layer/README.md; the weights are bf16. The result
// is checked against a token-by-token CPU reference in double. vkgmm creates its own device here
// (VKGMM_VALIDATE=1 turns the validation layer on; any message fails the run).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <vkgmm/vkgmm.hpp>

#include "../no_options.hpp"
#include "moe_reference.hpp"
#include "routing.hpp"

namespace {

constexpr int64_t kTokens = 61, kModel = 64, kFF = 96, kExperts = 8, kTopK = 2;
constexpr vkgmm::DType kWeightType = vkgmm::DType::bf16;

// An operand in a vkgmm buffer: encoded to its type, uploaded (vkgmm pads its own buffers to whole words).
vkgmm::Buffer upload(vkgmm::Context& ctx, vkgmm::DType t, const std::vector<float>& values) {
  const std::vector<uint8_t> encoded = vkgmm::encode(t, values);
  vkgmm::Buffer b = ctx.create_buffer(encoded.size());
  b.upload(encoded.data(), encoded.size());
  return b;
}

template <class T>
std::vector<T> download(const vkgmm::Buffer& b, size_t count) {
  std::vector<T> v(count);
  b.download(v.data(), count * sizeof(T));
  return v;
}

// The app's barrier between two of its steps: the first's shader writes visible to the second's reads.
void shader_write_to_read(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                       0, nullptr, 0, nullptr);
}

bool matches(const char* what, const std::vector<float>& got, const std::vector<double>& want, double tol) {
  double max_err = 0;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= tol * (1 + std::fabs(want[i])))) ++bad;
    max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
  }
  std::printf("%-8s %zu values, max error %.2e%s\n", what, got.size(), max_err, bad ? "  FAIL" : "");
  return bad == 0;
}

// What --help prints; the example takes no options (no_options.hpp).
constexpr const char* kHelp =
    "A Mixture-of-Experts layer (router, top-2 of 8 experts, SwiGLU with bias, bf16 weights) on the device\n"
    "in one command buffer, checked against a token-by-token CPU reference in double. Exits 1 on a\n"
    "mismatch. VKGMM_VALIDATE=1 turns the validation layer on (any message fails the run).\n";

}  // namespace

int main(int argc, char** argv) {
  if (const int exit_status = handle_no_options(argc, argv, "vkgmm_example_moe", kHelp); exit_status >= 0)
    return exit_status;
  try {
    vkgmm::Context ctx;
    std::printf("device: %s\n", ctx.info().name.c_str());

    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    moe::Weights w;
    w.d_model = kModel;
    w.d_ff = kFF;
    w.experts = kExperts;
    std::vector<float> x(kTokens * kModel);
    for (float& v : x) v = u(rng);
    auto init = [&](std::vector<float>& m, size_t count, double scale, vkgmm::DType stored) {
      m.resize(count);
      for (float& v : m) v = vkgmm::round_to(stored, static_cast<float>(u(rng) * scale));  // as the device sees it
    };
    init(w.router, kModel * kExperts, 2.0 / std::sqrt(kModel), vkgmm::DType::f32);
    init(w.up, kExperts * kModel * 2 * kFF, 1.0 / std::sqrt(kModel), kWeightType);  // [gate | up] columns
    init(w.up_bias, kExperts * 2 * kFF, 0.1, vkgmm::DType::f32);
    init(w.down, kExperts * kFF * kModel, 1.0 / std::sqrt(kFF), kWeightType);

    // The plans: made once per shape, recorded any number of times.
    vkgmm::GmmProblem router;  // a plain matmul: one group holding every token
    router.m = kTokens;
    router.k = kModel;
    router.n = kExperts;
    router.group_sizes = {int32_t(kTokens)};
    const vkgmm::GmmPlan router_plan(ctx, router);
    const vkgmm::TopKPlan top_k_plan(ctx, {kTokens, kExperts, kTopK, /*renormalize=*/true});

    vkgmm::GmmProblem up;  // per slot: h[t, j] = swiglu(x[t] @ up[ids[t, j]] + bias[ids[t, j]])
    up.m = kTokens;
    up.k = kModel;
    up.n = 2 * kFF;
    up.num_rhs_groups = kExperts;
    up.rhs_type = kWeightType;
    up.routing = {kTopK, /*lhs_per_slot=*/false, /*combine=*/false, kExperts};
    up.epilogue = {/*bias=*/true, vkgmm::Activation::swiglu};
    const vkgmm::GmmPlan up_plan(ctx, up);

    vkgmm::GmmProblem down;  // y[t] = sum_j weights[t, j] * (h[t, j] @ down[ids[t, j]]), in token order
    down.m = kTokens;
    down.k = kFF;
    down.n = kModel;
    down.num_rhs_groups = kExperts;
    down.rhs_type = kWeightType;
    down.routing = {kTopK, /*lhs_per_slot=*/true, /*combine=*/true, kExperts};
    const vkgmm::GmmPlan down_plan(ctx, down);

    const vkgmm::Buffer x_buf = upload(ctx, vkgmm::DType::f32, x);
    const vkgmm::Buffer router_buf = upload(ctx, vkgmm::DType::f32, w.router);
    const vkgmm::Buffer up_buf = upload(ctx, kWeightType, w.up), bias_buf = upload(ctx, vkgmm::DType::f32, w.up_bias);
    const vkgmm::Buffer down_buf = upload(ctx, kWeightType, w.down);
    vkgmm::Buffer logits = ctx.create_buffer(router_plan.sizes().out);
    vkgmm::Buffer ids = ctx.create_buffer(top_k_plan.sizes().ids);
    vkgmm::Buffer weights = ctx.create_buffer(top_k_plan.sizes().weights);
    vkgmm::Buffer h = ctx.create_buffer(up_plan.sizes().out);  // [T, top_k, d_ff] f32
    vkgmm::Buffer y = ctx.create_buffer(down_plan.sizes().out);
    // The status word of each routed gmm: ids outside [-1, E) would be counted there (and skipped).
    vkgmm::Buffer status = ctx.create_buffer(8);

    // No workspace view: each routed plan uses its own.
    vkgmm::GmmOperands up_ops;
    up_ops.lhs = x_buf.view();
    up_ops.rhs = up_buf.view();
    up_ops.out = h.view();
    up_ops.status = status.view(0, 4);
    up_ops.ids = ids.view();
    up_ops.bias = bias_buf.view();
    vkgmm::GmmOperands down_ops;
    down_ops.lhs = h.view();
    down_ops.rhs = down_buf.view();
    down_ops.out = y.view();
    down_ops.status = status.view(4, 4);
    down_ops.ids = ids.view();
    down_ops.weights = weights.view();
    vkgmm::GmmOperands router_ops;
    router_ops.lhs = x_buf.view();
    router_ops.rhs = router_buf.view();
    router_ops.out = logits.view();
    vkgmm::TopKOperands top_k_ops;
    top_k_ops.logits = logits.view();
    top_k_ops.ids = ids.view();
    top_k_ops.weights = weights.view();

    // One command buffer, one submit. Between the steps, the app's barriers: vkgmm records its own only
    // inside a routed gmm (its metadata build, and the combine).
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
      router_plan.record(cb, router_ops);
      shader_write_to_read(cb);
      top_k_plan.record(cb, top_k_ops);
      shader_write_to_read(cb);
      up_plan.record(cb, up_ops);
      shader_write_to_read(cb);
      down_plan.record(cb, down_ops);
    });
    const std::vector<float> out = download<float>(y, kTokens * kModel);

    // The checks read the intermediates too, after the fact: the router's logits against the reference's,
    // the device's routing against the host's on the same logits (exact ids), and the layer's output
    // against the token-by-token reference on the device's routing.
    const std::vector<float> got_logits = download<float>(logits, kTokens * kExperts);
    moe::TopK routing{download<int32_t>(ids, kTokens * kTopK), download<float>(weights, kTokens * kTopK)};
    const moe::TopK host_routing = moe::top_k(got_logits, kTokens, kExperts, kTopK);
    const std::vector<uint32_t> status_words = download<uint32_t>(status, 2);
    std::vector<int32_t> rows(kExperts, 0);
    for (int32_t e : routing.ids) ++rows[size_t(std::clamp<int32_t>(e, 0, kExperts - 1))];
    std::printf("slots per expert:");
    for (int32_t r : rows) std::printf(" %d", r);
    std::printf("\n");

    bool ok = matches("logits", got_logits, moe::router_logits(x, w, kTokens), 1e-4);
    const bool same_ids = routing.ids == host_routing.ids;
    std::printf("ids      %s the host's top-%lld of the same logits\n", same_ids ? "equal" : "differ from (FAIL)",
                (long long)kTopK);
    ok = ok && same_ids &&
         matches("weights", routing.weights, std::vector<double>(host_routing.weights.begin(), host_routing.weights.end()),
                 1e-5) &&
         matches("layer", out, moe::moe_layer_swiglu(x, w, routing, kTokens, kTopK), 1e-4);
    if (status_words[0] || status_words[1]) {
      std::printf("status words %u %u: the routed gmms found bad ids  FAIL\n", status_words[0], status_words[1]);
      ok = false;
    }
    if (!ok) return 1;
    std::printf("MoE layer (%lld tokens, %lld experts, top-%lld, SwiGLU, bf16 weights) matches the CPU reference\n",
                (long long)kTokens, (long long)kExperts, (long long)kTopK);
    return 0;
  } catch (const vkgmm::Error& e) {
    std::fprintf(stderr, "FAIL: vkgmm: %s (%s)\n", e.what(), vkgmm::status_name(e.status()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
  }
  return 1;
}
