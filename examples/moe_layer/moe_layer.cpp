// A Mixture-of-Experts feed-forward layer with vkgmm, checked against a token-by-token CPU reference:
//   logits = x @ router                  gmm with a single group (a plain matmul)
//   top-k routing, permutation           host: rows grouped by expert -> group_sizes
//   h = silu(x_perm @ up[e])             gmm over the experts (bf16 weights), SiLU on the host
//   y_perm = h @ down[e]                 gmm over the experts
//   y = sum_k weight * y_perm            host: weighted un-permutation back to token order
// vkgmm creates its own device here and submits for us (the convenience path); VKGMM_VALIDATE=1 turns
// the validation layer on, and any message fails the run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <vkgmm/vkgmm.hpp>

#include "moe_reference.hpp"
#include "routing.hpp"

namespace {

constexpr int64_t kTokens = 64, kModel = 64, kFF = 128, kExperts = 8, kTopK = 2;
constexpr vkgmm::DType kWeightType = vkgmm::DType::bf16;

// Bytes of `count` elements of type t (any count: vkgmm pads its own buffers to whole words).
VkDeviceSize stored_bytes(vkgmm::DType t, size_t count) { return count * vkgmm::dtype_size(t); }

// An operand in a vkgmm buffer: encoded to its type, uploaded.
vkgmm::Buffer upload(vkgmm::Context& ctx, vkgmm::DType t, const std::vector<float>& values, VkDeviceSize bytes) {
  vkgmm::Buffer b = ctx.create_buffer(bytes);
  const std::vector<uint8_t> encoded = vkgmm::encode(t, values);
  b.upload(encoded.data(), encoded.size());
  return b;
}

std::vector<float> download(const vkgmm::Buffer& b, size_t count) {
  std::vector<float> v(count);
  b.download(v.data(), count * sizeof(float));
  return v;
}

// The experts' matmul: rows grouped by expert, one plan per shape, recorded and submitted by the
// context's submit-and-wait helper.
std::vector<float> grouped(vkgmm::Context& ctx, const std::vector<int32_t>& group_sizes, const std::vector<float>& rows,
                           int64_t k, int64_t n, const vkgmm::Buffer& weights) {
  vkgmm::GmmProblem p;
  p.m = static_cast<int64_t>(rows.size()) / k;
  p.k = k;
  p.n = n;
  p.group_sizes = group_sizes;
  p.rhs_type = kWeightType;
  vkgmm::GmmPlan plan(ctx, p);
  vkgmm::Buffer lhs = upload(ctx, vkgmm::DType::f32, rows, plan.sizes().lhs);
  vkgmm::Buffer out = ctx.create_buffer(plan.sizes().out);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {lhs.view(), weights.view(), out.view(), {}}); });
  return download(out, p.m * n);
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

}  // namespace

int main() {
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
    auto init = [&](std::vector<float>& m, size_t count, double fan_in, bool bf16) {
      m.resize(count);
      for (float& v : m) v = static_cast<float>(u(rng) / std::sqrt(fan_in));
      if (bf16)
        for (float& v : m) v = vkgmm::round_to(kWeightType, v);  // the reference sees the stored values
    };
    init(w.router, kModel * kExperts, kModel, false);
    init(w.up, kExperts * kModel * kFF, kModel, true);
    init(w.down, kExperts * kFF * kModel, kFF, true);

    // 1. Router logits: a plain matmul is gmm with one group holding every row.
    vkgmm::GmmProblem router;
    router.m = kTokens;
    router.k = kModel;
    router.n = kExperts;
    router.group_sizes = {int32_t(kTokens)};
    vkgmm::Buffer x_buf = upload(ctx, vkgmm::DType::f32, x, kTokens * kModel * 4);
    vkgmm::Buffer router_buf = upload(ctx, vkgmm::DType::f32, w.router, kModel * kExperts * 4);
    vkgmm::Buffer logits_buf = ctx.create_buffer(kTokens * kExperts * 4);
    vkgmm::gmm(ctx, router, {x_buf.view(), router_buf.view(), logits_buf.view(), {}});
    const std::vector<float> logits = download(logits_buf, kTokens * kExperts);

    // 2. Top-k and the permutation into expert-contiguous rows (on the GPU logits, so that the
    //    reference below makes exactly the same choices).
    const moe::Routing routing = moe::route_top_k(logits, kTokens, kExperts, kTopK);
    std::printf("rows per expert:");
    for (int32_t s : routing.group_sizes) std::printf(" %d", s);
    std::printf("\n");
    const std::vector<float> x_perm = moe::permute(routing, x, kModel);

    // 3. Up projection, SiLU, down projection: one grouped matmul each over all experts.
    const vkgmm::Buffer up_buf = upload(ctx, kWeightType, w.up, stored_bytes(kWeightType, w.up.size()));
    const vkgmm::Buffer down_buf = upload(ctx, kWeightType, w.down, stored_bytes(kWeightType, w.down.size()));
    std::vector<float> h = grouped(ctx, routing.group_sizes, x_perm, kModel, kFF, up_buf);
    for (float& v : h) v = static_cast<float>(moe::silu(v));
    const std::vector<float> y_perm = grouped(ctx, routing.group_sizes, h, kFF, kModel, down_buf);

    // 4. Weighted un-permutation back to token order.
    const std::vector<float> y = moe::unpermute(routing, y_perm, kTokens, kModel);

    const bool ok = matches("logits", logits, moe::router_logits(x, w, kTokens), 1e-4) &&
                    matches("layer", y, moe::moe_layer(x, w, routing, kTokens), 1e-4);
    if (!ok) return 1;
    std::printf("MoE layer (%lld tokens, %lld experts, top-%lld) matches the CPU reference\n", (long long)kTokens,
                (long long)kExperts, (long long)kTopK);
    return 0;
  } catch (const vkgmm::Error& e) {
    std::fprintf(stderr, "FAIL: vkgmm: %s (%s)\n", e.what(), vkgmm::status_name(e.status()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
  }
  return 1;
}
