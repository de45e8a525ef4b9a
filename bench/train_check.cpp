// The check of a training step before it is timed (train.hpp). A token's rows of y and d_x depend on that
// token alone (its logits, its experts, its own d_y), so a sample of tokens is checked exactly, each on its
// own top-k experts, at a cost that grows with neither T nor E. The gradients of the weights sum over
// every token; those are checked finite and not all zero.
#include <algorithm>
#include <cmath>
#include <functional>

#include "check.hpp"
#include "train.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/reference.hpp"

namespace bench {
namespace {

constexpr int64_t kSampleTokens = 64;
// Logits whose k-th and (k+1)-th largest lie closer than this may be ordered differently by the device's
// fp32 sums than by the reference's double ones (they differ by ~1e-7 here): such tokens are left out.
constexpr float kTieMargin = 1e-4f;

// The projections as MoeLayerPlan defines them, on one token and its top-k experts (the only weights its
// rows read, bound as groups 0 .. top_k - 1).
vkgmm::GmmProblem projection(const vkgmm::MoeLayerProblem& p, bool up) {
  vkgmm::GmmProblem g = vkgmm::moe_layer_projection(p, up);
  g.m = 1;
  g.num_rhs_groups = g.routing.num_experts = p.top_k;
  g.group_offset = 0;
  g.existing_out = false;
  g.epilogue.save_pre_activation = false;
  return g;
}

// Tokens spread evenly over [0, T), those with a near tie at the top-k's edge left out; their logits
// (the router's reference gmm) into `logits`.
std::vector<int64_t> sample_tokens(const TrainInstance& inst, std::vector<float>& logits) {
  const vkgmm::MoeLayerProblem& p = inst.problem;
  const int64_t T = p.tokens, E = p.num_experts, K = p.top_k, S = std::min(T, kSampleTokens);
  const std::vector<int64_t> rows = spread(T, S);
  vkgmm::GmmProblem router;
  router.m = S, router.k = p.d_model, router.n = E, router.group_sizes = {int32_t(S)};
  router.lhs_type = p.dtype;
  const std::vector<float> all = vkgmm::reference::gmm(router, gather_rows(inst.x, rows, p.d_model), inst.router_w);
  std::vector<int64_t> kept;
  logits.clear();
  for (int64_t i = 0; i < S; ++i) {
    std::vector<float> l(all.begin() + i * E, all.begin() + (i + 1) * E);
    std::sort(l.begin(), l.end(), std::greater<float>());
    if (K < E && l[size_t(K - 1)] - l[size_t(K)] < kTieMargin) continue;
    kept.push_back(rows[size_t(i)]);
    logits.insert(logits.end(), all.begin() + i * E, all.begin() + (i + 1) * E);
  }
  return kept;
}

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// One token's y and d_x rows by vkgmm::reference: the router's logits given, top-k, both projections
// on its experts alone (renumbered 0 .. top_k - 1 in slot order), then the backward of each (down's
// d_hidden and d_weights, top-k's d_logits, up's d_x) and the router's share of d_x.
void token_reference(const TrainInstance& inst, int64_t t, const std::vector<float>& logits, float* y, float* d_x) {
  namespace ref = vkgmm::reference;
  const vkgmm::MoeLayerProblem& p = inst.problem;
  const int64_t d = p.d_model, f = p.d_ff, E = p.num_experts, K = p.top_k;
  const vkgmm::TopKProblem routing{1, E, K, p.renormalize};
  const ref::TopK top = ref::top_k(routing, logits);
  std::vector<int32_t> slots(static_cast<size_t>(K));
  for (int64_t j = 0; j < K; ++j) slots[size_t(j)] = int32_t(j);
  const vkgmm::GmmProblem up = projection(p, true), down = projection(p, false);
  const std::vector<float> w_up = gather_experts(inst.w_up, top.ids, d * up.n), b_up = gather_experts(inst.b_up, top.ids, up.n);
  const std::vector<float> w_down = gather_experts(inst.w_down, top.ids, f * d), b_down = gather_experts(inst.b_down, top.ids, d);
  const std::vector<float> x(inst.x.begin() + t * d, inst.x.begin() + (t + 1) * d);
  const std::vector<float> d_y(inst.d_y.begin() + t * d, inst.d_y.begin() + (t + 1) * d);
  const std::vector<float> hidden = ref::gmm_routed(up, x, w_up, slots, {}, {}, b_up);
  const std::vector<float> out = ref::gmm_routed(down, hidden, w_down, slots, top.weights, {}, b_down);
  std::copy(out.begin(), out.end(), y);
  const ref::RoutedGradients g_down = ref::gmm_routed_backward(down, {hidden, w_down, top.weights, b_down, slots}, d_y);
  const std::vector<double> d_logits = ref::top_k_backward(routing, logits, top.ids, top.weights, to_float(g_down.d_weights));
  const ref::RoutedGradients g_up = ref::gmm_routed_backward(up, {x, w_up, {}, b_up, slots}, to_float(g_down.d_lhs));
  for (int64_t i = 0; i < d; ++i) {
    double v = g_up.d_lhs[size_t(i)];
    for (int64_t e = 0; e < E; ++e) v += d_logits[size_t(e)] * double(inst.router_w[size_t(i * E + e)]);
    d_x[i] = vkgmm::round_to(p.dtype, float(v));
  }
}

std::optional<std::string> finite_gradients(const TrainInstance::Downloaded& got) {
  for (const auto& [name, values] : got.gradients) {
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.end())
      return name + "[" + std::to_string(bad - values.begin()) + "] = " + std::to_string(*bad) + " is not finite";
    if (std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; }))
      return name + ": every one of its " + std::to_string(values.size()) + " elements is 0";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_train(const TrainInstance& inst, const TrainInstance::Downloaded& got,
                                       int64_t& checked) {
  const vkgmm::MoeLayerProblem& p = inst.problem;
  const int64_t d = p.d_model, E = p.num_experts;
  std::vector<float> logits;
  const std::vector<int64_t> rows = sample_tokens(inst, logits);
  const int64_t S = int64_t(rows.size());
  checked = S;
  if (S == 0) return "every sampled token has a near tie in its top-k: nothing to compare";
  std::vector<float> y(size_t(S * d)), d_x(size_t(S * d));
  parallel_blocks(S, [&](int64_t i) {
    const std::vector<float> l(logits.begin() + i * E, logits.begin() + (i + 1) * E);
    token_reference(inst, rows[size_t(i)], l, &y[size_t(i * d)], &d_x[size_t(i * d)]);
  });
  const int64_t n_up = vkgmm::gated(p.activation) ? 2 * p.d_ff : p.d_ff;
  std::vector<Output> want = {{"y", y, p.d_ff}, {"d_x", d_x, p.top_k * n_up + E}};
  std::vector<Output> device = {{"y", gather_rows(got.y, rows, d), 0}, {"d_x", gather_rows(got.d_x, rows, d), 0}};
  perturb_if_asked(device, "train");
  if (auto diff = compare(device, want, p.dtype)) return *diff + " (rows of the " + std::to_string(S) + " sampled tokens)";
  return finite_gradients(got);
}

}  // namespace bench
