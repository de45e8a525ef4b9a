// The backward of gmm routed by expert ids, with its epilogues (GmmBackwardPlan on a routed forward):
// every gradient against the float64 reference (reference/routed_backward.cpp), whose own derivatives
// are checked by finite differences first; windows whose shards add up to the whole layer; bits equal
// run to run; hostile ids; refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string_view>

#include "context_impl.hpp"
#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"

namespace vkgmm::test {
namespace {

struct Case {
  const char* name;
  int64_t T, top_k, E, offset, e_local, k, n;
  bool per_slot, combine, bias;
  Activation act;
  bool transpose = false;
  DType lhs = DType::f32, rhs = DType::f32, out = DType::f32;
  int hit_experts = 0;  // > 0: ids only ever name this many experts (the others stay empty)
  uint32_t seed = 1;
};

GmmProblem problem_of(const Case& c) {
  GmmProblem p;
  p.m = c.T;
  p.k = c.k;
  p.n = c.n;
  p.group_offset = c.offset;
  p.num_rhs_groups = c.e_local;
  p.transpose_rhs = c.transpose;
  p.lhs_type = c.lhs;
  p.rhs_type = c.rhs;
  p.out_type = c.out;
  p.routing = {c.top_k, c.per_slot, c.combine, c.E};
  p.epilogue = {c.bias, c.act};
  return p;
}

// Distinct experts per token (as a router's top-k), about one slot in eight -1.
std::vector<int32_t> make_ids(const Case& c, std::mt19937& rng) {
  const int64_t pool = c.hit_experts > 0 ? c.hit_experts : c.E;
  std::vector<int32_t> ids;
  std::vector<int32_t> experts(static_cast<size_t>(pool));
  for (int64_t t = 0; t < c.T; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng);
    for (int64_t j = 0; j < c.top_k; ++j)
      ids.push_back(rng() % 8 == 0 || j >= pool ? -1 : experts[size_t(j)] + (c.hit_experts > 0 ? int32_t(c.offset) : 0));
  }
  return ids;
}

reference::RoutedInputs make_inputs(const Case& c, std::mt19937& rng) {
  reference::RoutedInputs in;
  const int64_t slots = c.T * c.top_k;
  in.ids = make_ids(c, rng);
  in.lhs = random_values(size_t((c.per_slot ? slots : c.T) * c.k), c.lhs, rng);
  in.rhs = random_values(size_t(c.e_local * c.k * c.n), c.rhs, rng);
  if (c.combine) {
    std::uniform_real_distribution<float> d(0.05f, 1.0f);
    for (int64_t s = 0; s < slots; ++s) in.weights.push_back(d(rng));
  }
  if (c.bias) in.bias = random_values(size_t(c.e_local * c.n), DType::f32, rng);
  return in;
}

std::vector<float> make_d_out(const Case& c, std::mt19937& rng) {
  const int64_t n_out = gated(c.act) ? c.n / 2 : c.n;
  return random_values(size_t((c.combine ? c.T : c.T * c.top_k) * n_out), c.out, rng);
}

struct DeviceGrads {
  std::vector<float> d_lhs, d_rhs, d_bias, d_weights;
};

// The routed backward on the device. `start` holds d_lhs's and d_weights's starting values with
// options.accumulate (else the outputs start poisoned). The pre-activation: recomputed by the backward;
// saved (the forward runs first, saving it, and the backward reads it); or zeros given in its place.
// d_out's view starts `d_out_skip` elements into its buffer.
enum class Pre { recomputed, saved, zeros };
DeviceGrads run_routed_backward(Context& ctx, const GmmProblem& p, const reference::RoutedInputs& in,
                                const std::vector<float>& d_out, const GmmBackwardOptions& options = {},
                                const DeviceGrads* start = nullptr, uint32_t expected_status = 0,
                                Pre pre = Pre::recomputed, size_t d_out_skip = 0) {
  const GmmBackwardPlan plan(ctx, p, options);
  const GmmBackwardSizes sizes = plan.sizes();
  Buffer lhs = upload(ctx, p.lhs_type, in.lhs), rhs = upload(ctx, p.rhs_type, in.rhs);
  std::vector<float> padded(d_out_skip + d_out.size(), 0.0f);
  std::copy(d_out.begin(), d_out.end(), padded.begin() + std::ptrdiff_t(d_out_skip));
  Buffer dout = upload(ctx, p.out_type, padded);
  Buffer ids = ctx.create_buffer(std::max<size_t>(in.ids.size() * 4, 4));
  if (!in.ids.empty()) ids.upload(in.ids.data(), in.ids.size() * 4);
  Buffer d_lhs = start ? upload(ctx, p.lhs_type, start->d_lhs) : poisoned(ctx, sizes.d_lhs);
  Buffer d_rhs = poisoned(ctx, sizes.d_rhs), status = status_word(ctx);
  Buffer weights, bias, d_bias, d_weights;
  GmmBackwardOperands ops;
  ops.lhs = lhs.view(), ops.rhs = rhs.view(), ops.d_out = dout.view(d_out_skip * dtype_size(p.out_type), sizes.d_out);
  ops.d_lhs = d_lhs.view(0, sizes.d_lhs), ops.d_rhs = d_rhs.view(0, sizes.d_rhs);
  ops.ids = ids.view(0, sizes.ids), ops.status = status.view();
  if (p.routing.combine) {
    ops.weights = (weights = upload(ctx, DType::f32, in.weights)).view();
    d_weights = start ? upload(ctx, DType::f32, start->d_weights) : poisoned(ctx, sizes.d_weights);
    ops.d_weights = d_weights.view(0, sizes.d_weights);
  }
  if (p.epilogue.bias) {
    ops.bias = (bias = upload(ctx, DType::f32, in.bias)).view();
    ops.d_bias = (d_bias = poisoned(ctx, sizes.d_bias)).view(0, sizes.d_bias);
  }
  std::optional<GmmPlan> forward;
  Buffer out, zeros;
  GmmOperands f;
  if (pre == Pre::zeros) {
    zeros = upload(ctx, DType::f32, std::vector<float>(sizes.pre_activation / 4, 0.0f));
    ops.pre_activation = zeros.view(0, sizes.pre_activation);
  }
  if (pre == Pre::saved) {
    GmmProblem fp = p;
    fp.epilogue.save_pre_activation = true;
    forward.emplace(ctx, fp);
    out = poisoned(ctx, std::max<VkDeviceSize>(forward->sizes().out, 4));
    f.lhs = ops.lhs, f.rhs = ops.rhs, f.out = out.view(0, forward->sizes().out), f.ids = ops.ids;
    f.weights = ops.weights, f.bias = ops.bias;
    ops.pre_activation = forward->saved_pre_activation();
    EXPECT_EQ(ops.pre_activation.size, sizes.pre_activation);
  }
  ctx.submit_and_wait([&](VkCommandBuffer cb) {
    if (forward) {
      forward->record(cb, f);
      const VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                               VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
      vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                           0, nullptr, 0, nullptr);
    }
    plan.record(cb, ops);
  });
  if (p.m > 0) expect_status(status, expected_status);
  DeviceGrads g;
  g.d_lhs = download(d_lhs, p.lhs_type, sizes.d_lhs / dtype_size(p.lhs_type));
  g.d_rhs = download(d_rhs, p.rhs_type, sizes.d_rhs / dtype_size(p.rhs_type));
  if (p.epilogue.bias) g.d_bias = download(d_bias, DType::f32, sizes.d_bias / 4);
  if (p.routing.combine) g.d_weights = download(d_weights, DType::f32, sizes.d_weights / 4);
  return g;
}

std::vector<float> narrow(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// f32 sums of a few dozen terms against float64; 16-bit outputs round to their type.
double rtol_for(DType t) { return t == DType::f32 ? 2e-4 : 1.6e-2; }
constexpr double kAtol = 2e-3;

void expect_matches(const Case& c, const DeviceGrads& got, const reference::RoutedGradients& want) {
  EXPECT_TRUE(all_close(got.d_lhs, narrow(want.d_lhs), kAtol, rtol_for(c.lhs))) << "d_lhs";
  EXPECT_TRUE(all_close(got.d_rhs, narrow(want.d_rhs), kAtol, rtol_for(c.rhs))) << "d_rhs";
  if (c.bias) EXPECT_TRUE(all_close(got.d_bias, narrow(want.d_bias), kAtol, 2e-4)) << "d_bias";
  if (c.combine) EXPECT_TRUE(all_close(got.d_weights, narrow(want.d_weights), kAtol, rtol_for(c.out))) << "d_weights";
}

const Case kCases[] = {
    // An MoE layer's up projection ([gate | up], per slot, bias, SwiGLU) and its down projection (per-slot
    // input, combined with the routing weights, bias).
    {"up_swiglu_bias", 37, 2, 6, 0, 6, 24, 40, false, false, true, Activation::swiglu},
    {"down_combined_bias", 37, 2, 6, 0, 6, 20, 24, true, true, true, Activation::none},
    {"combined_swiglu_oai", 29, 3, 5, 0, 5, 16, 18, false, true, false, Activation::swiglu_oai},
    {"combined_geglu", 29, 2, 4, 0, 4, 16, 22, false, true, true, Activation::geglu},
    {"per_slot_plain", 21, 2, 4, 0, 4, 13, 11, false, false, false, Activation::none},
    {"window_swiglu_combined", 33, 3, 8, 2, 3, 12, 20, false, true, true, Activation::swiglu},
    {"transposed_rhs", 25, 2, 5, 0, 5, 16, 24, false, true, false, Activation::swiglu, true},
    {"f16_bf16", 27, 2, 4, 0, 4, 16, 24, false, true, true, Activation::swiglu, false, DType::f16, DType::bf16,
     DType::f16},
    {"bf16_per_slot", 19, 2, 4, 0, 4, 8, 12, true, false, true, Activation::geglu, true, DType::bf16, DType::bf16,
     DType::bf16},
    {"empty_experts", 23, 2, 6, 0, 6, 9, 14, false, true, true, Activation::swiglu, false, DType::f32, DType::f32,
     DType::f32, 2},
    {"one_of_each", 1, 1, 1, 0, 1, 1, 2, false, true, true, Activation::swiglu},
    {"no_tokens", 0, 2, 4, 0, 4, 8, 8, false, true, true, Activation::swiglu},
    {"no_local_expert", 11, 2, 8, 3, 0, 8, 10, false, true, true, Activation::swiglu},
};

class RoutedBackward : public DeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(RoutedBackward, MatchesFloat64Reference) {
  const Case& c = GetParam();
  std::mt19937 rng(c.seed);
  const GmmProblem p = problem_of(c);
  const reference::RoutedInputs in = make_inputs(c, rng);
  const std::vector<float> d_out = make_d_out(c, rng);
  const DeviceGrads got = run_routed_backward(ctx(), p, in, d_out);
  expect_matches(c, got, reference::gmm_routed_backward(p, in, d_out));
  // The forward's saved pre-activation gives the same bits as the recomputed one.
  const DeviceGrads saved = run_routed_backward(ctx(), p, in, d_out, {}, nullptr, 0, Pre::saved);
  EXPECT_TRUE(same_bits(saved.d_lhs, got.d_lhs)) << "d_lhs";
  EXPECT_TRUE(same_bits(saved.d_rhs, got.d_rhs)) << "d_rhs";
  EXPECT_TRUE(same_bits(saved.d_bias, got.d_bias)) << "d_bias";
  EXPECT_TRUE(same_bits(saved.d_weights, got.d_weights)) << "d_weights";
  if (c.hit_experts > 0) {
    // Experts no slot names get zero gradients, written.
    const size_t per_expert = size_t(c.k * c.n);
    for (size_t i = size_t(c.hit_experts) * per_expert; i < got.d_rhs.size(); ++i) ASSERT_EQ(got.d_rhs[i], 0.0f) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RoutedBackward, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// The reference's derivatives against central differences of its own float64 forward.
TEST(RoutedBackwardReference, MatchesFiniteDifferences) {
  for (const Case& base : kCases) {
    if (base.T == 0 || base.T > 30) continue;
    Case c = base;
    c.T = std::min<int64_t>(c.T, 5);
    c.lhs = c.rhs = c.out = DType::f32;
    std::mt19937 rng(7);
    const GmmProblem p = problem_of(c);
    const reference::RoutedInputs in = make_inputs(c, rng);
    const std::vector<float> d_out = make_d_out(c, rng);
    const reference::RoutedGradients g = reference::gmm_routed_backward(p, in, d_out);
    std::vector<double> lhs(in.lhs.begin(), in.lhs.end()), rhs(in.rhs.begin(), in.rhs.end());
    std::vector<double> w(in.weights.begin(), in.weights.end()), b(in.bias.begin(), in.bias.end());
    // The forward the differences take is gmm_routed's (reference.cpp, written apart from the backward's
    // helpers): a layout mistake the backward and its dot shared would show here.
    const std::vector<float> y = reference::gmm_routed(p, in.lhs, in.rhs, in.ids, in.weights, {}, in.bias);
    ASSERT_EQ(y.size(), d_out.size()) << c.name;
    double dot = 0, scale = 0;
    for (size_t i = 0; i < y.size(); ++i) dot += double(y[i]) * d_out[i], scale += std::abs(double(y[i]) * d_out[i]);
    EXPECT_NEAR(reference::gmm_routed_dot(p, in, lhs, rhs, w, b, d_out), dot, 1e-6 * scale + 1e-12) << c.name;
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* what) {
      for (size_t i = 0; i < x.size(); i += 1 + x.size() / 7) {
        const double keep = x[i], h = 1e-5;
        x[i] = keep + h;
        const double up = reference::gmm_routed_dot(p, in, lhs, rhs, w, b, d_out);
        x[i] = keep - h;
        const double down = reference::gmm_routed_dot(p, in, lhs, rhs, w, b, d_out);
        x[i] = keep;
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-6 + 1e-5 * std::abs(grad[i])) << c.name << " " << what << "[" << i << "]";
      }
    };
    check(lhs, g.d_lhs, "d_lhs");
    check(rhs, g.d_rhs, "d_rhs");
    if (c.combine) check(w, g.d_weights, "d_weights");
    if (c.bias) check(b, g.d_bias, "d_bias");
  }
}

// Planned as a discrete GPU of one compute unit, the forward's gmm takes tile heights per group (its
// estimate: about 270 slots per expert carrying them, tests/test_gmm_tile_passes.cpp), its rows divided
// by the routing build's counts (3 experts named, about 315 slots each): the same gradients.
TEST(RoutedBackwardGpuPlanned, TileHeightsPerGroup) {
  Context c = gpu_planned_context(ContextOptions{}, 1);
  Case k{"heights", 540, 2, 8, 0, 8, 16, 24, false, true, true, Activation::swiglu};
  k.hit_experts = 3;
  const GmmProblem p = problem_of(k);
  size_t passes = 0;
  for (const PlannedPipeline& pp : PlanInternals::pipelines(GmmPlan(c, p))) passes += std::string(pp.role) == "op";
  ASSERT_GE(passes, 2u) << "the forward took one tile height";
  std::mt19937 rng(k.seed);
  const reference::RoutedInputs in = make_inputs(k, rng);
  const std::vector<float> d_out = make_d_out(k, rng);
  expect_matches(k, run_routed_backward(c, p, in, d_out), reference::gmm_routed_backward(p, in, d_out));
}

// Shards of the experts (each a window, accumulating d_lhs and d_weights) add up to the whole layer's
// gradients; each shard's d_rhs and d_bias are the whole layer's rows of its experts.
TEST_F(DeviceTest, RoutedBackwardShardsAddUp) {
  for (const bool per_slot : {false, true}) {
    Case c{"shards", 31, 3, 6, 0, 6, 12, 16, per_slot, !per_slot, true, Activation::swiglu};
    std::mt19937 rng(3);
    const GmmProblem whole = problem_of(c);
    const reference::RoutedInputs in = make_inputs(c, rng);
    const std::vector<float> d_out = make_d_out(c, rng);
    const reference::RoutedGradients want = reference::gmm_routed_backward(whole, in, d_out);
    DeviceGrads sum;
    sum.d_lhs.assign(want.d_lhs.size(), 0.0f);
    sum.d_weights.assign(want.d_weights.size(), 0.0f);
    std::vector<float> d_rhs, d_bias;
    for (const int64_t offset : {0, 2, 5}) {
      Case s = c;
      s.offset = offset;
      s.e_local = offset == 0 ? 2 : offset == 2 ? 3 : 1;
      const GmmProblem p = problem_of(s);
      reference::RoutedInputs part = in;
      part.rhs.assign(in.rhs.begin() + offset * c.k * c.n, in.rhs.begin() + (offset + s.e_local) * c.k * c.n);
      part.bias.assign(in.bias.begin() + offset * c.n, in.bias.begin() + (offset + s.e_local) * c.n);
      GmmBackwardOptions o;
      o.accumulate = true;
      const DeviceGrads g = run_routed_backward(ctx(), p, part, d_out, o, &sum);
      sum.d_lhs = g.d_lhs;
      sum.d_weights = g.d_weights;
      d_rhs.insert(d_rhs.end(), g.d_rhs.begin(), g.d_rhs.end());
      d_bias.insert(d_bias.end(), g.d_bias.begin(), g.d_bias.end());
    }
    EXPECT_TRUE(all_close(sum.d_lhs, narrow(want.d_lhs), kAtol, 2e-4)) << "d_lhs, per_slot " << per_slot;
    EXPECT_TRUE(all_close(d_rhs, narrow(want.d_rhs), kAtol, 2e-4)) << "d_rhs";
    EXPECT_TRUE(all_close(d_bias, narrow(want.d_bias), kAtol, 2e-4)) << "d_bias";
    if (c.combine) EXPECT_TRUE(all_close(sum.d_weights, narrow(want.d_weights), kAtol, 2e-4)) << "d_weights";
  }
}

// Every sum runs in a fixed order: two runs give the same bits.
TEST_F(DeviceTest, RoutedBackwardBitsEqualRunToRun) {
  const Case c = kCases[0];
  std::mt19937 rng(5);
  const GmmProblem p = problem_of(c);
  const reference::RoutedInputs in = make_inputs(c, rng);
  const std::vector<float> d_out = make_d_out(c, rng);
  const DeviceGrads a = run_routed_backward(ctx(), p, in, d_out), b = run_routed_backward(ctx(), p, in, d_out);
  EXPECT_EQ(0, std::memcmp(a.d_lhs.data(), b.d_lhs.data(), a.d_lhs.size() * 4));
  EXPECT_EQ(0, std::memcmp(a.d_rhs.data(), b.d_rhs.data(), a.d_rhs.size() * 4));
  EXPECT_EQ(0, std::memcmp(a.d_bias.data(), b.d_bias.data(), a.d_bias.size() * 4));
}

// Planning compiles what the records bind and nothing more (on a context that compiles lazily, as CPU
// drivers do, where a compile costs about a second): every pipeline the context holds after planning is
// one the backward lists. d_lhs copies the forward's routing and compiles no build of its own, nor does
// the recompute where the backward's owner gives the routing (MoeLayerPlan's); the gradient pass compiles
// its planned build only. d_lhs's plan recorded on its own compiles its own build then, and gives a fresh
// plan's bits.
TEST_F(DeviceTest, RoutedBackwardCompilesOnlyWhatItRecords) {
  const Case c = kCases[1];
  const GmmProblem f = problem_of(c);
  ContextOptions lazy;
  lazy.eager_pipelines = false;
  for (const bool routing_given : {false, true}) {
    SCOPED_TRACE(routing_given ? "a part given the routing" : "the app's plan");
    Context cx = make_context(lazy);
    const GmmBackwardPlan plan = routing_given ? PlanInternals::taking_routing(cx, f, GmmBackwardOptions{})
                                                : GmmBackwardPlan(cx, f);
    const std::vector<VkPipeline> made = ContextInternals::of(cx).pipelines.made();
    std::vector<VkPipeline> listed;
    for (const PlannedPart& part : PlanInternals::parts(plan)) {
      for (const PlannedPipeline& p : part.pipelines) listed.push_back(p.pipeline);
      if (std::string_view(part.part) == "d_lhs" || (routing_given && std::string_view(part.part) == "forward"))
        EXPECT_STREQ(part.pipelines.at(0).role, "metadata given") << part.part;
    }
    for (VkPipeline p : made) EXPECT_NE(std::find(listed.begin(), listed.end(), p), listed.end()) << "unlisted";
  }

  // d_lhs's plan on its own: its own build compiled by the record that needs it, the bits a plan of its
  // problem gives.
  Context cx = make_context(lazy);
  const GmmBackwardPlan plan(cx, f);
  const GmmPlan& d_lhs = plan.d_lhs_plan();
  const GmmProblem& q = d_lhs.problem();
  std::mt19937 rng(23);
  const std::vector<int32_t> ids = make_ids(c, rng);
  const std::vector<float> lhs = random_values(d_lhs.sizes().lhs / 4, DType::f32, rng);
  const std::vector<float> rhs = random_values(d_lhs.sizes().rhs / 4, DType::f32, rng);
  const std::vector<float> weights(ids.size(), 1.0f);
  Buffer l = upload(cx, DType::f32, lhs), r = upload(cx, DType::f32, rhs), w = upload(cx, DType::f32, weights);
  Buffer i = cx.create_buffer(ids.size() * 4), o = poisoned(cx, d_lhs.sizes().out);
  i.upload(ids.data(), ids.size() * 4);
  GmmOperands ops{l.view(), r.view(), o.view()};
  ops.ids = i.view();
  if (q.routing.combine) ops.weights = w.view();
  const size_t before = ContextInternals::of(cx).pipelines.size();
  cx.submit_and_wait([&](VkCommandBuffer cb) { d_lhs.record(cb, ops); });
  EXPECT_GT(ContextInternals::of(cx).pipelines.size(), before) << "its own build";
  const std::vector<float> got = download(o, q.out_type, d_lhs.sizes().out / 4);
  EXPECT_TRUE(same_bits(got, run_gmm_routed(cx, q, lhs, rhs, ids, q.routing.combine ? weights : std::vector<float>{})));
}

// The gradient pass reads 4 adjacent columns as one vector where every view allows (here: d_out at its
// buffer's start), else as 4 scalars (d_out one element in): the same values summed in the same order, so
// the same bits, per slot and combined (d_weights' dot products), f32 and 16-bit.
TEST_F(DeviceTest, RoutedBackwardBitsEqualAtEveryDOutOffset) {
  for (const size_t i : {size_t(0), size_t(1), size_t(7)}) {
    const Case c = kCases[i];
    SCOPED_TRACE(c.name);
    ASSERT_EQ((gated(c.act) ? c.n / 2 : c.n) % 4, 0) << "rows of whole 4-column groups";
    ASSERT_EQ(c.k % 4, 0);
    std::mt19937 rng(17);
    const GmmProblem p = problem_of(c);
    const reference::RoutedInputs in = make_inputs(c, rng);
    const std::vector<float> d_out = make_d_out(c, rng);
    const DeviceGrads a = run_routed_backward(ctx(), p, in, d_out);
    const DeviceGrads b = run_routed_backward(ctx(), p, in, d_out, {}, nullptr, 0, Pre::recomputed, 1);
    expect_matches(c, a, reference::gmm_routed_backward(p, in, d_out));
    EXPECT_TRUE(same_bits(a.d_lhs, b.d_lhs)) << "d_lhs";
    EXPECT_TRUE(same_bits(a.d_rhs, b.d_rhs)) << "d_rhs";
    EXPECT_TRUE(same_bits(a.d_bias, b.d_bias)) << "d_bias";
    EXPECT_TRUE(same_bits(a.d_weights, b.d_weights)) << "d_weights";
  }
}

// The gradient area's regions are bound one by one: an area past one binding works where each region
// fits one (a context whose binding limit is 1 MiB: the area here is 1.3 MB, its largest region 0.64 MB).
TEST_F(DeviceTest, RoutedBackwardAreaPastOneBinding) {
  static Context limited = binding_limited_context(uint64_t(1) << 20);
  const Case c{"area", 100, 2, 2, 0, 2, 32, 800, false, true, true, Activation::swiglu};
  std::mt19937 rng(17);
  const GmmProblem p = problem_of(c);
  const GmmBackwardPlan plan(limited, p);
  const uint64_t slots = uint64_t(c.T * c.top_k);
  ASSERT_GT(slots * uint64_t(2 * c.n + c.k) * 4, limited.info().max_storage_buffer_range);
  const reference::RoutedInputs in = make_inputs(c, rng);
  const std::vector<float> d_out = make_d_out(c, rng);
  expect_matches(c, run_routed_backward(limited, p, in, d_out), reference::gmm_routed_backward(p, in, d_out));
  // Past one binding (the saved pre-activation, [T * top_k, n] f32, first): refused, asking for fewer tokens.
  Case big = c;
  big.n = 1400;
  expect_refused([&] { GmmBackwardPlan(limited, problem_of(big)); }, Status::unsupported, "fewer tokens per call");
}

// Where the sums run in the same order, the routed backward gives the sorted path's bits: per slot, no
// epilogue, the same tiling and schedule; the sorted path's rows are the local slots in expert order (each
// expert's in slot order, as the routing build orders them), their group sizes on the host.
TEST_F(DeviceTest, RoutedBackwardMatchesTheSortedPathBitForBit) {
  const Case c{"sorted", 29, 2, 5, 1, 3, 20, 24, true, false, false, Activation::none};
  std::mt19937 rng(11);
  GmmProblem p = problem_of(c);
  p.tiling = TilingChoice::of(Tiling{8, 4, 8});
  p.schedule = Schedule::direct;
  const reference::RoutedInputs in = make_inputs(c, rng);
  const std::vector<float> d_out = make_d_out(c, rng);
  const DeviceGrads routed = run_routed_backward(ctx(), p, in, d_out);

  std::vector<int64_t> order;  // local slots in expert order
  std::vector<int32_t> sizes(size_t(c.e_local), 0);
  for (int64_t e = 0; e < c.e_local; ++e)
    for (int64_t s = 0; s < c.T * c.top_k; ++s)
      if (in.ids[size_t(s)] == int32_t(c.offset + e)) order.push_back(s), ++sizes[size_t(e)];
  ASSERT_GT(order.size(), 10u);
  const size_t R = order.size(), K = size_t(c.k), N = size_t(c.n);
  std::vector<float> lhs(R * K), dy(R * N);
  for (size_t r = 0; r < R; ++r) {
    std::copy_n(in.lhs.begin() + order[r] * K, K, lhs.begin() + r * K);
    std::copy_n(d_out.begin() + order[r] * N, N, dy.begin() + r * N);
  }
  GmmProblem sorted;
  sorted.m = int64_t(R), sorted.k = c.k, sorted.n = c.n;
  sorted.group_sizes = sizes;
  sorted.tiling = p.tiling;
  sorted.schedule = p.schedule;
  Context& cx = ctx();
  Buffer a = upload(cx, DType::f32, lhs), w = upload(cx, DType::f32, in.rhs), g = upload(cx, DType::f32, dy);
  Buffer d_lhs = poisoned(cx, R * K * 4), d_rhs = poisoned(cx, in.rhs.size() * 4);
  GmmBackwardOperands ops;
  ops.lhs = a.view(), ops.rhs = w.view(), ops.d_out = g.view(), ops.d_lhs = d_lhs.view(), ops.d_rhs = d_rhs.view();
  gmm_backward(cx, sorted, ops);
  EXPECT_TRUE(same_bits(download(d_rhs, DType::f32, in.rhs.size()), routed.d_rhs)) << "d_rhs";
  const std::vector<float> sorted_d_lhs = download(d_lhs, DType::f32, R * K);
  std::vector<float> want(R * K), got(R * K);
  for (size_t r = 0; r < R; ++r) {
    std::copy_n(sorted_d_lhs.begin() + r * K, K, want.begin() + r * K);
    std::copy_n(routed.d_lhs.begin() + order[r] * K, K, got.begin() + r * K);
  }
  EXPECT_TRUE(same_bits(got, want)) << "d_lhs";
}

// Ids below -1 or past num_experts are flagged in the status word and skipped, as the forward does.
TEST_F(DeviceTest, RoutedBackwardSkipsHostileIds) {
  Case c = kCases[1];
  std::mt19937 rng(9);
  const GmmProblem p = problem_of(c);
  reference::RoutedInputs in = make_inputs(c, rng);
  in.ids[0] = -7;
  in.ids[3] = int32_t(c.E) + 4;
  in.ids[5] = 1 << 30;
  const std::vector<float> d_out = make_d_out(c, rng);
  reference::RoutedInputs skipped = in;
  for (int32_t& id : skipped.ids)
    if (id < -1 || id >= c.E) id = -1;
  const DeviceGrads got = run_routed_backward(ctx(), p, in, d_out, {}, nullptr, device_status::bad_id);
  expect_matches(c, got, reference::gmm_routed_backward(p, skipped, d_out));
}

// Hostile ids with every output and the app's workspace between guard regions: nothing is written past a
// view, the results are those of the ids skipped.
TEST_F(DeviceTest, RoutedBackwardStaysInsideItsViews) {
  Context& cx = ctx();
  Case c = kCases[5];  // a window, combined, bias, SwiGLU
  std::mt19937 rng(13);
  const GmmProblem p = problem_of(c);
  reference::RoutedInputs in = make_inputs(c, rng);
  in.ids[1] = -5;
  in.ids[4] = int32_t(c.E) + 100;
  const std::vector<float> d_out = make_d_out(c, rng);
  reference::RoutedInputs skipped = in;
  skipped.ids[1] = skipped.ids[4] = -1;
  const GmmBackwardPlan plan(cx, p);
  const GmmBackwardSizes s = plan.sizes();
  Buffer lhs = upload(cx, p.lhs_type, in.lhs), rhs = upload(cx, p.rhs_type, in.rhs), dout = upload(cx, p.out_type, d_out);
  Buffer ids = cx.create_buffer(in.ids.size() * 4), weights = upload(cx, DType::f32, in.weights);
  Buffer bias = upload(cx, DType::f32, in.bias), status = status_word(cx);
  ids.upload(in.ids.data(), in.ids.size() * 4);
  Guarded d_lhs(cx, s.d_lhs), d_rhs(cx, s.d_rhs), d_bias(cx, s.d_bias), d_weights(cx, s.d_weights);
  // The workspace's view at a binding-aligned offset inside its guards.
  const VkDeviceSize align = std::max<VkDeviceSize>(cx.info().min_storage_buffer_offset_alignment, Guarded::kGuard);
  Buffer work = cx.create_buffer(plan.workspace_bytes() + 2 * align);
  std::vector<uint8_t> poison(work.size(), Guarded::kPoison);
  work.upload(poison.data(), poison.size());
  GmmBackwardOperands ops;
  ops.lhs = lhs.view(), ops.rhs = rhs.view(), ops.d_out = dout.view(), ops.ids = ids.view(), ops.weights = weights.view();
  ops.bias = bias.view(), ops.status = status.view();
  ops.d_lhs = d_lhs.view(), ops.d_rhs = d_rhs.view(), ops.d_bias = d_bias.view(), ops.d_weights = d_weights.view();
  ops.workspace = work.view(align, plan.workspace_bytes());
  cx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  expect_status(status, device_status::bad_id);
  for (const Guarded* g : {&d_lhs, &d_rhs, &d_bias, &d_weights}) EXPECT_TRUE(g->guards_intact());
  std::vector<uint8_t> after(work.size());
  work.download(after.data(), after.size());
  for (size_t i = 0; i < align; ++i) ASSERT_EQ(after[i], Guarded::kPoison) << "workspace guard before, byte " << i;
  for (size_t i = align + plan.workspace_bytes(); i < after.size(); ++i)
    ASSERT_EQ(after[i], Guarded::kPoison) << "workspace guard after, byte " << i;
  DeviceGrads got{floats(d_lhs), floats(d_rhs), floats(d_bias), floats(d_weights)};
  expect_matches(c, got, reference::gmm_routed_backward(p, skipped, d_out));
}

// A forward with group sizes and an epilogue: its backward is that of the routed forward it equals (each
// row one slot, its id its group; rows past the sizes' sum in no group), windows and empty groups too.
TEST_F(DeviceTest, EpilogueBackwardWithGroupSizes) {
  struct Grouped {
    std::vector<int32_t> sizes;
    int64_t offset, g_local;
    Activation act;
    bool bias;
  };
  const Grouped cases[] = {{{7, 0, 12, 5}, 0, 4, Activation::swiglu, true},
                           {{3, 9, 0, 6, 4}, 1, 3, Activation::geglu, false},
                           {{10, 2}, 0, 2, Activation::none, true}};
  for (const Grouped& g : cases) {
    std::mt19937 rng(11);
    GmmProblem p;
    p.m = 30;  // past the sizes' sum in every case: those rows belong to no group
    p.k = 12;
    p.n = 16;
    p.group_sizes = g.sizes;
    p.group_offset = g.offset;
    p.num_rhs_groups = g.g_local;
    p.epilogue = {g.bias, g.act};
    reference::RoutedInputs in;
    int32_t group = 0, left = g.sizes[0];
    for (int64_t t = 0; t < p.m; ++t) {
      while (group < int32_t(g.sizes.size()) && left == 0) left = ++group < int32_t(g.sizes.size()) ? g.sizes[size_t(group)] : 0;
      in.ids.push_back(group < int32_t(g.sizes.size()) ? group : -1);
      --left;
    }
    in.lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
    in.rhs = random_values(size_t(g.g_local * p.k * p.n), DType::f32, rng);
    if (g.bias) in.bias = random_values(size_t(g.g_local * p.n), DType::f32, rng);
    const std::vector<float> d_out = random_values(size_t(p.m * (gated(g.act) ? p.n / 2 : p.n)), DType::f32, rng);
    GmmProblem routed = p;
    routed.group_sizes.clear();
    routed.routing = {1, false, false, int64_t(g.sizes.size())};
    const reference::RoutedGradients want = reference::gmm_routed_backward(routed, in, d_out);

    const GmmBackwardPlan plan(ctx(), p);
    const GmmBackwardSizes sizes = plan.sizes();
    EXPECT_EQ(sizes.ids, 0u);
    Buffer lhs = upload(ctx(), DType::f32, in.lhs), rhs = upload(ctx(), DType::f32, in.rhs);
    Buffer dout = upload(ctx(), DType::f32, d_out), d_lhs = poisoned(ctx(), sizes.d_lhs), d_rhs = poisoned(ctx(), sizes.d_rhs);
    Buffer bias, d_bias;
    GmmBackwardOperands ops;
    ops.lhs = lhs.view(), ops.rhs = rhs.view(), ops.d_out = dout.view(), ops.d_lhs = d_lhs.view(0, sizes.d_lhs);
    ops.d_rhs = d_rhs.view(0, sizes.d_rhs);
    if (g.bias) {
      ops.bias = (bias = upload(ctx(), DType::f32, in.bias)).view();
      ops.d_bias = (d_bias = poisoned(ctx(), sizes.d_bias)).view(0, sizes.d_bias);
    }
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
    EXPECT_TRUE(all_close(download(d_lhs, DType::f32, in.lhs.size()), narrow(want.d_lhs), kAtol, 2e-4));
    EXPECT_TRUE(all_close(download(d_rhs, DType::f32, in.rhs.size()), narrow(want.d_rhs), kAtol, 2e-4));
    if (g.bias) EXPECT_TRUE(all_close(download(d_bias, DType::f32, in.bias.size()), narrow(want.d_bias), kAtol, 2e-4));
  }
  // Their groups must be on the host.
  GmmProblem p;
  p.m = 8, p.k = 4, p.n = 4, p.device_group_sizes = {2, 0};
  p.epilogue = {true, Activation::none};
  expect_invalid_argument([&] { GmmBackwardPlan(ctx(), p); }, "device_group_sizes: the backward of a fused bias");
}

// GmmBackwardOptions::accumulate with group sizes: the window's rows of d_lhs written, every other row
// (other groups', past the sizes' sum) keeping what the view held, whether the forward has an epilogue
// (taken as the routed forward it equals) or not: no row is shared between shards, so none is added to.
TEST_F(DeviceTest, AccumulateWritesTheWindowsRowsWithOrWithoutAnEpilogue) {
  std::mt19937 rng(23);
  GmmProblem p;
  p.m = 20, p.k = 6, p.n = 8;
  p.group_sizes = {4, 5, 3, 6};  // rows 18 and 19 belong to no group
  p.group_offset = 1, p.num_rhs_groups = 2;  // the window: groups 1 and 2, rows 4 to 11
  const std::vector<float> lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
  const std::vector<float> rhs = random_values(size_t(2 * p.k * p.n), DType::f32, rng);
  const std::vector<float> bias = random_values(size_t(2 * p.n), DType::f32, rng);
  const std::vector<float> d_out = random_values(size_t(p.m * p.n), DType::f32, rng);
  const std::vector<float> held(size_t(p.m * p.k), 1.0f);
  std::vector<float> want = held;  // the window's rows: d_out @ rhs[g]^T (a bias changes no d_lhs)
  for (int64_t r = 4; r < 12; ++r)
    for (int64_t i = 0; i < p.k; ++i) {
      const int64_t e = r < 9 ? 0 : 1;
      double sum = 0;
      for (int64_t j = 0; j < p.n; ++j)
        sum += double(d_out[size_t(r * p.n + j)]) * rhs[size_t((e * p.k + i) * p.n + j)];
      want[size_t(r * p.k + i)] = float(sum);
    }
  GmmBackwardOptions accumulate;
  accumulate.accumulate = true;
  for (bool with_bias : {false, true}) {
    SCOPED_TRACE(with_bias ? "with a fused bias" : "without an epilogue");
    p.epilogue = {with_bias, Activation::none};
    const GmmBackwardPlan plan(ctx(), p, accumulate);
    const GmmBackwardSizes sizes = plan.sizes();
    Buffer a = upload(ctx(), DType::f32, lhs), b = upload(ctx(), DType::f32, rhs), c = upload(ctx(), DType::f32, bias);
    Buffer dout = upload(ctx(), DType::f32, d_out), d_lhs = upload(ctx(), DType::f32, held);
    Buffer d_rhs = poisoned(ctx(), sizes.d_rhs), d_bias = poisoned(ctx(), std::max<size_t>(sizes.d_bias, 4));
    GmmBackwardOperands ops;
    ops.lhs = a.view(), ops.rhs = b.view(), ops.d_out = dout.view(), ops.d_lhs = d_lhs.view();
    ops.d_rhs = d_rhs.view(0, sizes.d_rhs);
    if (with_bias) ops.bias = c.view(), ops.d_bias = d_bias.view(0, sizes.d_bias);
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
    EXPECT_TRUE(all_close(download(d_lhs, DType::f32, held.size()), want, kAtol, 2e-4));
  }
}

// The gated activations at special values, forward and backward, against the reference (NaN where it
// has NaN): a NaN gate or up (which swiglu_oai's clamps must not turn into a bound: GLSL's min and clamp
// of a NaN are undefined), gates whose square overflows (geglu's derivative), infinities, the clamps' own
// bounds. Each pre-activation is its bias alone (lhs 1, rhs 0): the pairs are [gate | up] columns.
TEST_F(DeviceTest, GatedActivationsAtSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::pair<float, float> pairs[] = {{nan, 1.f},  {nan, nan},    {0.f, nan},    {1.f, nan},
                                           {8.f, nan},  {nan, 8.f},    {-3.f, nan},   {1e20f, 1.f},
                                           {-1e20f, 1.f}, {1e30f, 2.f}, {-1e30f, 2.f}, {inf, 1.f},
                                           {-inf, 1.f}, {7.f, 7.f},    {1.f, -0.5f}};
  const int64_t half = int64_t(std::size(pairs));
  for (Activation act : {Activation::swiglu, Activation::swiglu_oai, Activation::geglu}) {
    SCOPED_TRACE(activation_name(act));
    GmmProblem p;
    p.m = 1, p.k = 4, p.n = 2 * half;
    p.group_sizes = {1};
    p.num_rhs_groups = 1;
    p.epilogue = {true, act};
    reference::RoutedInputs in;
    in.ids = {0};
    in.lhs.assign(size_t(p.k), 1.0f);
    in.rhs.assign(size_t(p.k * p.n), 0.0f);
    in.bias.resize(size_t(p.n));
    for (int64_t j = 0; j < half; ++j) in.bias[size_t(j)] = pairs[j].first, in.bias[size_t(half + j)] = pairs[j].second;
    const std::vector<float> out = run_gmm(ctx(), p, in.lhs, in.rhs, {}, in.bias);
    const std::vector<float> want_out = reference::gmm(p, in.lhs, in.rhs, {}, in.bias);
    EXPECT_TRUE(all_close(out, want_out, 1e-5, 1e-5)) << "forward";
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[4])) << "a NaN gate or up gives NaN";

    const std::vector<float> d_out(size_t(half), 1.0f);
    GmmProblem routed = p;
    routed.group_sizes.clear();
    routed.routing = {1, false, false, 1};
    const reference::RoutedGradients want = reference::gmm_routed_backward(routed, in, d_out);
    const GmmBackwardPlan plan(ctx(), p);
    const GmmBackwardSizes sizes = plan.sizes();
    Buffer lhs = upload(ctx(), DType::f32, in.lhs), rhs = upload(ctx(), DType::f32, in.rhs);
    Buffer bias = upload(ctx(), DType::f32, in.bias), dout = upload(ctx(), DType::f32, d_out);
    Buffer d_lhs = poisoned(ctx(), sizes.d_lhs), d_rhs = poisoned(ctx(), sizes.d_rhs);
    Buffer d_bias = poisoned(ctx(), sizes.d_bias);
    GmmBackwardOperands ops;
    ops.lhs = lhs.view(), ops.rhs = rhs.view(), ops.bias = bias.view(), ops.d_out = dout.view();
    ops.d_lhs = d_lhs.view(0, sizes.d_lhs), ops.d_rhs = d_rhs.view(0, sizes.d_rhs);
    ops.d_bias = d_bias.view(0, sizes.d_bias);
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
    const std::vector<float> got_d_bias = download(d_bias, DType::f32, in.bias.size());
    EXPECT_TRUE(all_close(got_d_bias, narrow(want.d_bias), 1e-5, 1e-5)) << "d_bias: the derivatives";
    EXPECT_TRUE(all_close(download(d_rhs, DType::f32, in.rhs.size()), narrow(want.d_rhs), 1e-5, 1e-5)) << "d_rhs";
    EXPECT_TRUE(all_close(download(d_lhs, DType::f32, in.lhs.size()), narrow(want.d_lhs), 1e-5, 1e-5)) << "d_lhs";
    // A NaN gate's derivative is NaN (the reference's own rule, checked here, not only matched).
    EXPECT_TRUE(std::isnan(got_d_bias[0]) && std::isnan(got_d_bias[1])) << "d gate at a NaN gate";
    if (act == Activation::geglu) {
      EXPECT_EQ(got_d_bias[7], 1.0f) << "geglu' at 1e20: 1, where gate^2 overflows";
      EXPECT_EQ(got_d_bias[9], 2.0f) << "geglu' at 1e30, times up = 2";
    }
  }
}

TEST_F(DeviceTest, RoutedBackwardRefusesViewsItHasNoUseFor) {
  Context& cx = ctx();
  Case c = kCases[4];  // per slot, no bias, no combine
  const GmmProblem p = problem_of(c);
  const GmmBackwardPlan plan(cx, p);
  const GmmBackwardSizes s = plan.sizes();
  Buffer b = cx.create_buffer(1 << 16);
  GmmBackwardOperands ops;
  ops.lhs = b.view(0, s.lhs), ops.rhs = b.view(4096, s.rhs), ops.d_out = b.view(8192, s.d_out);
  ops.d_lhs = b.view(16384, s.d_lhs), ops.d_rhs = b.view(24576, s.d_rhs), ops.ids = b.view(32768, s.ids);
  GmmBackwardOperands with = ops;
  with.d_weights = b.view(40960, 64);
  expect_invalid_argument([&] { plan.check(with); }, "d_weights: a view was given but the forward does not combine");
  with = ops;
  with.d_bias = b.view(40960, 64);
  expect_invalid_argument([&] { plan.check(with); }, "d_bias: a view was given but the forward has no bias");
  with = ops;
  with.group_sizes = b.view(40960, 64);
  expect_invalid_argument([&] { plan.check(with); },
                          "group_sizes: a view was given but the forward is routed by expert ids (the ids give the groups)");
  // Each written view against every other (the backward's operand table): the earlier written one named.
  with = ops;
  with.status = b.view(16384, 4);  // inside d_lhs
  expect_invalid_argument([&] { plan.check(with); }, "gmm_backward: d_lhs overlaps status");
  with = ops;
  with.workspace = b.view(32768, plan.workspace_bytes());  // over ids
  expect_invalid_argument([&] { plan.check(with); }, "gmm_backward: workspace overlaps ids");
  // Unrouted forwards take no routed views.
  GmmProblem plain;
  plain.m = 8, plain.k = 4, plain.n = 4, plain.group_sizes = {8};
  const GmmBackwardPlan unrouted(cx, plain);
  GmmBackwardOperands u;
  u.lhs = b.view(0, 128), u.rhs = b.view(4096, 64), u.d_out = b.view(8192, 128), u.d_lhs = b.view(16384, 128);
  u.d_rhs = b.view(24576, 64), u.ids = b.view(32768, 32);
  expect_invalid_argument([&] { unrouted.check(u); }, "ids: a view was given but the forward is not routed");
  u.ids = {};
  u.pre_activation = b.view(32768, 32);
  expect_invalid_argument([&] { unrouted.check(u); }, "pre_activation: a view was given but the forward is not routed");
}

// The saved pre-activation: only a routed forward keeps one; the backward takes a view of its size that
// overlaps no output.
TEST_F(DeviceTest, SavedPreActivationIsChecked) {
  Context& cx = ctx();
  Case c = kCases[0];  // per slot, bias, SwiGLU
  GmmProblem p = problem_of(c);
  expect_invalid_argument([&] { GmmPlan(cx, p).saved_pre_activation(); }, "saves none");
  GmmProblem sized = p;
  sized.routing = {};
  sized.group_sizes = {int32_t(c.T)};
  sized.num_rhs_groups = -1;
  sized.epilogue.save_pre_activation = true;
  expect_invalid_argument([&] { GmmPlan(cx, sized); }, "epilogue.save_pre_activation: only a gmm routed by ids");
  p.epilogue.save_pre_activation = true;
  const GmmPlan forward(cx, p);
  const BufferView own = forward.saved_pre_activation();
  EXPECT_EQ(own.size, VkDeviceSize(c.T * c.top_k * c.n * 4));
  EXPECT_NE(own.buffer, VK_NULL_HANDLE);
  Buffer w = cx.create_buffer(forward.workspace_bytes() + 256);
  const BufferView in_app = forward.saved_pre_activation(w.view(256, forward.workspace_bytes()));
  EXPECT_EQ(in_app.buffer, w.handle());
  EXPECT_GE(in_app.offset, 256u);
  EXPECT_LE(in_app.offset + in_app.size, 256 + forward.workspace_bytes());
  // A workspace too small for the plan, or off the offset alignment, gives no view into it.
  expect_invalid_argument([&] { forward.saved_pre_activation(w.view(256, forward.workspace_bytes() - 4)); },
                          "saved_pre_activation: workspace: view of");
  expect_invalid_argument([&] { forward.saved_pre_activation(w.view(2, forward.workspace_bytes())); },
                          "saved_pre_activation: workspace: offset 2");

  const GmmBackwardPlan plan(cx, p);
  const GmmBackwardSizes s = plan.sizes();
  EXPECT_EQ(s.pre_activation, own.size);
  Buffer b = cx.create_buffer(1 << 20);
  GmmBackwardOperands ops;
  ops.lhs = b.view(0, s.lhs), ops.rhs = b.view(65536, s.rhs), ops.d_out = b.view(131072, s.d_out);
  ops.d_lhs = b.view(196608, s.d_lhs), ops.d_rhs = b.view(262144, s.d_rhs), ops.ids = b.view(327680, s.ids);
  ops.bias = b.view(393216, s.bias), ops.d_bias = b.view(458752, s.d_bias);
  ops.pre_activation = b.view(524288, s.pre_activation);
  plan.check(ops);
  GmmBackwardOperands bad = ops;
  bad.pre_activation.size -= 4;
  expect_invalid_argument([&] { plan.check(bad); }, "pre_activation");
  bad = ops;
  bad.pre_activation = b.view(196608, s.pre_activation);  // over d_lhs
  expect_invalid_argument([&] { plan.check(bad); }, "pre_activation");
  // The view given is what the backward reads: SwiGLU's derivatives at a pre-activation of 0 are 0.
  std::mt19937 rng(3);
  const reference::RoutedInputs in = make_inputs(c, rng);
  const std::vector<float> d_out = make_d_out(c, rng);
  const DeviceGrads real = run_routed_backward(cx, problem_of(c), in, d_out);
  const DeviceGrads zero = run_routed_backward(cx, problem_of(c), in, d_out, {}, nullptr, 0, Pre::zeros);
  EXPECT_GT(*std::max_element(real.d_lhs.begin(), real.d_lhs.end()), 0.0f);
  for (const std::vector<float>* v : {&zero.d_lhs, &zero.d_rhs, &zero.d_bias})
    for (float x : *v) ASSERT_EQ(x, 0.0f);
  // A forward with group sizes and an epilogue saves none: its backward recomputes.
  GmmProblem grouped = sized;
  grouped.epilogue.save_pre_activation = false;
  const GmmBackwardPlan grouped_plan(cx, grouped);
  EXPECT_EQ(grouped_plan.sizes().pre_activation, 0u);
  GmmBackwardOperands g;
  const GmmBackwardSizes gs = grouped_plan.sizes();
  g.lhs = b.view(0, gs.lhs), g.rhs = b.view(65536, gs.rhs), g.d_out = b.view(131072, gs.d_out);
  g.d_lhs = b.view(196608, gs.d_lhs), g.d_rhs = b.view(262144, gs.d_rhs);
  g.bias = b.view(393216, gs.bias), g.d_bias = b.view(458752, gs.d_bias);
  grouped_plan.check(g);
  g.pre_activation = b.view(524288, s.pre_activation);
  expect_invalid_argument([&] { grouped_plan.check(g); }, "pre_activation: a view was given but the forward's groups");
}

}  // namespace
}  // namespace vkgmm::test
