// The routed backward workload (see routed_grad.hpp).
#include "routed_grad.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include "check.hpp"
#include "problems.hpp"
#include "vkgmm/reference.hpp"

namespace bench {
namespace {

constexpr int64_t kSampleTokens = 64;
constexpr int64_t kSampleExperts = 2;
constexpr int64_t kBlock = 16;  // columns per reference call of an expert's d_rhs

const Workload& supported(const Workload& w) {
  if (!w.routed() || !w.combine || w.lhs_per_slot || w.bias || w.activation != vkgmm::Activation::none ||
      w.quantized())
    throw std::invalid_argument("workload '" + w.name + "': the routed backward bench takes a combined forward "
                                "with lhs [T, k], no bias, no activation and unquantized weights");
  return w;
}

vkgmm::GmmProblem with_tiling(vkgmm::GmmProblem p, const vkgmm::TilingChoice& tiling) {
  p.tiling = tiling;
  return p;
}

// The sorted path's forward: one row per slot in expert order, host group sizes, out f32 as the routed
// forward's.
vkgmm::GmmProblem sorted_problem(const Workload& w, const vkgmm::TilingChoice& tiling) {
  vkgmm::GmmProblem p = gmm_problem(w);
  p.m = w.m * w.top_k;
  p.out_type = vkgmm::DType::f32;
  p.tiling = tiling;
  return p;
}

}  // namespace

RoutedGradInstance::RoutedGradInstance(vkgmm::Context& ctx, const Workload& w, const vkgmm::TilingChoice& tiling)
    : forward(ctx, supported(w), tiling, 1),
      order_(expert_order(w)),
      backward_(ctx, with_tiling(forward.problem(true), tiling)),
      sorted_(ctx, sorted_problem(w, tiling)) {
  const int64_t T = w.m, K = w.top_k, S = T * K, k = w.k, n = w.n;
  const vkgmm::DType f32 = vkgmm::DType::f32;
  std::mt19937 rng(w.seed * 7919u + 31u);
  d_out = random_values(size_t(T * n), f32, rng);
  d_out_ = upload(ctx, f32, d_out);
  d_lhs_ = zeros(ctx, w.dtype, size_t(T * k));
  d_rhs_ = zeros(ctx, w.dtype, size_t(w.groups * k * n));
  d_weights_ = zeros(ctx, f32, size_t(S));
  status_ = zeros(ctx, f32, 1);
  const vkgmm::GmmBackwardSizes z = backward_.sizes();
  ops_.lhs = forward.buf_a.view(0, z.lhs), ops_.rhs = forward.buf_b.front().view(0, z.rhs);
  ops_.d_out = d_out_.view(0, z.d_out), ops_.d_lhs = d_lhs_.view(0, z.d_lhs), ops_.d_rhs = d_rhs_.view(0, z.d_rhs);
  ops_.ids = forward.buf_ids.view(0, z.ids), ops_.weights = forward.buf_weights.view(0, z.weights);
  ops_.d_weights = d_weights_.view(0, z.d_weights), ops_.status = status_.view(0, 4);
  forward.plan(tiling, true, true);
  ops_.pre_activation = forward.saved_pre_activation();

  // The peer's rows: slot order_[i] at row i.
  std::vector<float> lhs(size_t(S * k)), dy(size_t(S * n));
  for (int64_t i = 0; i < S; ++i) {
    const int64_t slot = order_[size_t(i)], t = slot / K;
    std::copy_n(forward.a.begin() + t * k, k, lhs.begin() + i * k);
    const float weight = w.route_weights[size_t(slot)];
    std::transform(d_out.begin() + t * n, d_out.begin() + (t + 1) * n, dy.begin() + i * n,
                   [weight](float v) { return v * weight; });
  }
  sorted_lhs_ = upload(ctx, w.dtype, lhs);
  sorted_d_out_ = upload(ctx, f32, dy);
  sorted_d_lhs_ = zeros(ctx, w.dtype, size_t(S * k));
  sorted_d_rhs_ = zeros(ctx, w.dtype, size_t(w.groups * k * n));
  const vkgmm::GmmBackwardSizes y = sorted_.sizes();
  sorted_ops_.lhs = sorted_lhs_.view(0, y.lhs), sorted_ops_.rhs = forward.buf_b.front().view(0, y.rhs);
  sorted_ops_.d_out = sorted_d_out_.view(0, y.d_out), sorted_ops_.d_lhs = sorted_d_lhs_.view(0, y.d_lhs);
  sorted_ops_.d_rhs = sorted_d_rhs_.view(0, y.d_rhs);
}

std::string RoutedGradInstance::tiling_text() const { return backward_tiling_text(backward_); }
std::string RoutedGradInstance::sorted_tiling_text() const { return backward_tiling_text(sorted_); }

void RoutedGradInstance::record(VkCommandBuffer cb) const { backward_.record(cb, ops_); }
void RoutedGradInstance::record_sorted(VkCommandBuffer cb) const { sorted_.record(cb, sorted_ops_); }

uint32_t RoutedGradInstance::device_status() const {
  uint32_t word = 0;
  status_.download(&word, 4);
  return word;
}

void RoutedGradInstance::poison_outputs() const {
  fill_with_nan(forward.ctx, {&d_lhs_, &d_rhs_, &d_weights_, &sorted_d_lhs_, &sorted_d_rhs_});
}

std::vector<Output> RoutedGradInstance::download() const {
  const Workload& w = forward.work;
  return {{"d_lhs", bench::download(d_lhs_, w.dtype, size_t(w.m * w.k)), 0},
          {"d_rhs", bench::download(d_rhs_, w.dtype, size_t(w.groups * w.k * w.n)), 0},
          {"d_weights", bench::download(d_weights_, vkgmm::DType::f32, size_t(w.m * w.top_k)), 0}};
}

std::vector<Output> RoutedGradInstance::download_sorted() const {
  const Workload& w = forward.work;
  const int64_t k = w.k, S = w.m * w.top_k;
  const std::vector<float> rows = bench::download(sorted_d_lhs_, w.dtype, size_t(S * k));
  std::vector<float> slots(rows.size());
  for (int64_t i = 0; i < S; ++i) std::copy_n(rows.begin() + i * k, k, slots.begin() + order_[size_t(i)] * k);
  return {{"d_lhs", std::move(slots), 0},
          {"d_rhs", bench::download(sorted_d_rhs_, w.dtype, size_t(w.groups * k * w.n)), 0}};
}

namespace {

namespace ref = vkgmm::reference;

// Token t's rows by the reference on its own experts (renumbered 0 .. top_k - 1 in slot order: its rows
// read no other): the forward's out row, the backward's d_lhs row and d_weights, and each slot's d_lhs
// row on its own (the slot a token of its own, top_k 1, its routing weight): the sorted path's, whose
// 16-bit rows are rounded before any sum over the token's slots.
void token_reference(const RoutedGradInstance& inst, int64_t t, float* out, float* d_lhs, float* d_weights,
                     float* slot_d_lhs) {
  const Workload& w = inst.forward.work;
  const int64_t K = w.top_k, k = w.k, n = w.n;
  vkgmm::GmmProblem p = inst.forward.problem(true);
  p.m = 1;
  p.num_rhs_groups = p.routing.num_experts = K;
  const std::vector<int32_t> experts(w.ids.begin() + t * K, w.ids.begin() + (t + 1) * K);
  std::vector<int32_t> slots(static_cast<size_t>(K));
  std::iota(slots.begin(), slots.end(), 0);
  const std::vector<float> weights(w.route_weights.begin() + t * K, w.route_weights.begin() + (t + 1) * K);
  const std::vector<float> rhs = gather_experts(inst.forward.b, experts, k * n);
  const std::vector<float> lhs = gather_rows(inst.forward.a, {t}, k), dy = gather_rows(inst.d_out, {t}, n);
  const std::vector<float> y = ref::gmm_routed(p, lhs, rhs, slots, weights);
  std::copy(y.begin(), y.end(), out);
  const ref::RoutedGradients g = ref::gmm_routed_backward(p, {lhs, rhs, weights, {}, slots}, dy);
  std::copy(g.d_lhs.begin(), g.d_lhs.end(), d_lhs);
  std::copy(g.d_weights.begin(), g.d_weights.end(), d_weights);
  vkgmm::GmmProblem one = p;
  one.num_rhs_groups = one.routing.num_experts = one.routing.top_k = 1;
  for (int64_t j = 0; j < K; ++j) {
    const std::vector<float> w_j = gather_experts(rhs, {int32_t(j)}, k * n);
    const ref::RoutedGradients s = ref::gmm_routed_backward(one, {lhs, w_j, {weights[size_t(j)]}, {}, {0}}, dy);
    std::copy(s.d_lhs.begin(), s.d_lhs.end(), slot_d_lhs + j * k);
  }
}

// Expert e's d_rhs [k, n] by the reference on its slots alone, in slot order as the whole problem sums
// them, each slot a token of its own (top_k 1, its routing weight); on column blocks on every core, as
// check.cpp runs gmm: without an activation a column of d_rhs reads that column of d_out alone.
std::vector<float> expert_reference(const RoutedGradInstance& inst, int32_t e) {
  const Workload& w = inst.forward.work;
  const int64_t k = w.k, n = w.n;
  std::vector<int64_t> tokens;
  std::vector<float> weights;
  for (size_t s = 0; s < w.ids.size(); ++s) {
    if (w.ids[s] != e) continue;
    tokens.push_back(int64_t(s) / w.top_k);
    weights.push_back(w.route_weights[s]);
  }
  const int64_t m = int64_t(tokens.size());
  const std::vector<float> lhs = gather_rows(inst.forward.a, tokens, k);
  const std::vector<int32_t> ids(size_t(m), 0);
  std::vector<float> d_rhs(size_t(k * n), 0.0f);
  parallel_blocks((n + kBlock - 1) / kBlock, [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, cw = std::min(kBlock, n - c0);
    vkgmm::GmmProblem p = inst.forward.problem(true);
    p.m = m, p.n = cw;
    p.num_rhs_groups = p.routing.num_experts = p.routing.top_k = 1;
    std::vector<float> rhs(size_t(k * cw)), dy(size_t(m * cw));
    for (int64_t i = 0; i < k; ++i)
      std::copy_n(inst.forward.b.begin() + (e * k + i) * n + c0, cw, rhs.begin() + i * cw);
    for (int64_t r = 0; r < m; ++r) std::copy_n(inst.d_out.begin() + tokens[size_t(r)] * n + c0, cw, dy.begin() + r * cw);
    const ref::RoutedGradients g = ref::gmm_routed_backward(p, {lhs, rhs, weights, {}, ids}, dy);
    for (int64_t i = 0; i < k; ++i)
      std::copy(g.d_rhs.begin() + i * cw, g.d_rhs.begin() + (i + 1) * cw, d_rhs.begin() + i * n + c0);
  });
  return d_rhs;
}

}  // namespace

GradReference grad_reference(const RoutedGradInstance& inst) {
  const Workload& w = inst.forward.work;
  const int64_t K = w.top_k, k = w.k, n = w.n;
  GradReference r;
  r.sample.tokens = spread(w.m, kSampleTokens);
  std::vector<int32_t> selected;
  for (int32_t e = 0; e < int32_t(w.groups); ++e)
    if (w.group_sizes[size_t(e)] > 0) selected.push_back(e);
  for (const int64_t i : spread(int64_t(selected.size()), kSampleExperts)) r.sample.experts.push_back(selected[size_t(i)]);
  const int64_t S = int64_t(r.sample.tokens.size());
  std::vector<float> out(size_t(S * n)), d_lhs(size_t(S * k)), d_weights(size_t(S * K)), slot_d_lhs(size_t(S * K * k));
  std::vector<float> d_rhs;
  parallel_blocks(S, [&](int64_t i) {
    token_reference(inst, r.sample.tokens[size_t(i)], &out[size_t(i * n)], &d_lhs[size_t(i * k)],
                    &d_weights[size_t(i * K)], &slot_d_lhs[size_t(i * K * k)]);
  });
  int32_t most_slots = 0;  // the longest sum behind d_rhs
  for (const int32_t e : r.sample.experts) {
    const std::vector<float> slab = expert_reference(inst, e);
    d_rhs.insert(d_rhs.end(), slab.begin(), slab.end());
    most_slots = std::max(most_slots, w.group_sizes[size_t(e)]);
  }
  r.forward = {{"out", std::move(out), k}};
  r.sorted = {{"d_lhs", std::move(slot_d_lhs), n}, {"d_rhs", d_rhs, most_slots}};
  r.backward = {{"d_lhs", std::move(d_lhs), K * n}, {"d_rhs", std::move(d_rhs), most_slots}, {"d_weights", std::move(d_weights), n}};
  return r;
}

std::vector<Output> on_sample(const GradSample& s, const Workload& w, std::vector<Output> full) {
  for (Output& o : full)
    o.values = o.name == "d_rhs" ? gather_experts(o.values, s.experts, w.k * w.n)
                                 : gather_rows(o.values, s.tokens, int64_t(o.values.size()) / w.m);
  return full;
}

}  // namespace bench
