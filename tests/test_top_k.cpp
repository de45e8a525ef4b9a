// Top-k routing (TopKPlan) on the device against vkgmm::reference::top_k: random logits over a sweep of
// tokens, experts and k (odd sizes, k = 1 and k = E), with and without renormalisation; ties, NaN and
// infinities; guard regions around the outputs; and the arguments refused before any GPU work.
// Its backward (TopKBackwardPlan) against vkgmm::reference::top_k_backward, itself checked by finite
// differences: the same sweep, ties and non-finite logits, hostile ids, accumulate, no tokens, the
// refusals, and the forward and backward recorded in one command buffer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

struct TopKCase {
  int64_t tokens, experts, top_k;
  bool renormalize;
};

struct TopKResult {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Runs the plan with its outputs in guarded views; expects the guards intact.
TopKResult run_top_k(Context& ctx, const TopKProblem& p, const std::vector<float>& logits) {
  Guarded in = guarded_floats(ctx, logits);
  Guarded ids(ctx, VkDeviceSize(p.tokens * p.top_k) * 4), weights(ctx, VkDeviceSize(p.tokens * p.top_k) * 4);
  top_k(ctx, p, {in.view(), ids.view(), weights.view()});
  EXPECT_TRUE(ids.guards_intact());
  EXPECT_TRUE(weights.guards_intact());
  TopKResult r;
  r.weights = floats(weights);
  const std::vector<uint8_t> raw = ids.get();
  r.ids.resize(raw.size() / 4);
  std::memcpy(r.ids.data(), raw.data(), raw.size());
  return r;
}

// Ids exactly; weights within a few ulps of the double reference (the device's exp is not exact).
void expect_matches_reference(const TopKProblem& p, const std::vector<float>& logits, const TopKResult& got,
                              const std::string& what) {
  const reference::TopK want = reference::top_k(p, logits);
  ASSERT_EQ(got.ids.size(), want.ids.size()) << what;
  for (size_t i = 0; i < want.ids.size(); ++i) {
    ASSERT_EQ(got.ids[i], want.ids[i]) << what << " slot " << i;
    EXPECT_NEAR(got.weights[i], want.weights[i], 2e-6f * std::max(1.0f, std::fabs(want.weights[i])))
        << what << " slot " << i;
  }
}

class TopKTest : public DeviceTest, public ::testing::WithParamInterface<TopKCase> {};

TEST_P(TopKTest, MatchesTheReference) {
  const TopKCase c = GetParam();
  std::mt19937 rng(uint32_t(c.tokens * 131 + c.experts * 7 + c.top_k));
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> logits(size_t(c.tokens * c.experts));
  for (float& v : logits) v = d(rng);
  const TopKProblem p{c.tokens, c.experts, c.top_k, c.renormalize};
  const TopKResult got = run_top_k(ctx(), p, logits);
  expect_matches_reference(p, logits, got, "random logits");
  if (c.renormalize)
    for (int64_t t = 0; t < c.tokens; ++t) {
      double sum = 0;
      for (int64_t j = 0; j < c.top_k; ++j) sum += got.weights[size_t(t * c.top_k + j)];
      EXPECT_NEAR(sum, 1.0, 1e-5) << "token " << t;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopKTest,
                         ::testing::Values(TopKCase{1, 1, 1, true}, TopKCase{1, 8, 2, true}, TopKCase{7, 5, 5, false},
                                           TopKCase{64, 8, 2, true}, TopKCase{65, 128, 8, true},
                                           TopKCase{33, 64, 6, false}, TopKCase{200, 32, 4, true},
                                           TopKCase{3, 257, 1, false}, TopKCase{130, 3, 2, true}),
                         [](const auto& info) {
                           const TopKCase& c = info.param;
                           return "T" + std::to_string(c.tokens) + "_E" + std::to_string(c.experts) + "_k" +
                                  std::to_string(c.top_k) + (c.renormalize ? "_renorm" : "_softmax");
                         });

// Equal logits go to the lower expert first; NaN ranks below -inf's equals by index; +inf and all -inf
// give finite weights.
TEST_F(DeviceTest, TopKTiesNaNAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t E = 6;
  const std::vector<float> logits = {
      1, 3, 3, 0, 3, 2,                 // a three-way tie at the top
      nan, -1, nan, -2, -inf, -3,       // NaN ranks as -inf: after every number
      -inf, -inf, -inf, -inf, -inf, -inf,  // all -inf: equal weights, experts 0, 1, 2
      0, inf, 1, inf, -inf, 2,          // two +inf: each its own top term
  };
  for (const bool renormalize : {true, false}) {
    const TopKProblem p{4, E, 3, renormalize};
    const TopKResult got = run_top_k(ctx(), p, logits);
    expect_matches_reference(p, logits, got, renormalize ? "renormalized" : "softmax");
    EXPECT_EQ(std::vector<int32_t>(got.ids.begin(), got.ids.begin() + 3), (std::vector<int32_t>{1, 2, 4}));
    EXPECT_EQ(std::vector<int32_t>(got.ids.begin() + 3, got.ids.begin() + 6), (std::vector<int32_t>{1, 3, 5}));
    EXPECT_EQ(std::vector<int32_t>(got.ids.begin() + 6, got.ids.begin() + 9), (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(std::vector<int32_t>(got.ids.begin() + 9, got.ids.end()), (std::vector<int32_t>{1, 3, 5}));
    for (float w : got.weights) EXPECT_TRUE(std::isfinite(w));
    EXPECT_FLOAT_EQ(got.weights[6], renormalize ? 1.0f / 3 : 1.0f / 6);
  }
}

// Repeated runs give the same bits (gmm's combine relies on the same ids and weights each time).
TEST_F(DeviceTest, TopKIsDeterministic) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> logits(size_t(97 * 40));
  for (float& v : logits) v = d(rng);
  const TopKProblem p{97, 40, 7, true};
  const TopKResult a = run_top_k(ctx(), p, logits), b = run_top_k(ctx(), p, logits);
  expect_matches_reference(p, logits, a, "deterministic");
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_TRUE(same_bits(a.weights, b.weights));
}

TEST_F(DeviceTest, TopKRefusesBadArguments) {
  Context& c = ctx();
  expect_invalid_argument([&] { TopKPlan(c, {-1, 8, 2, true}); }, "tokens");
  expect_invalid_argument([&] { TopKPlan(c, {4, 0, 1, true}); }, "experts");
  expect_invalid_argument([&] { TopKPlan(c, {4, 8, 0, true}); }, "top_k");
  expect_invalid_argument([&] { TopKPlan(c, {4, 8, 9, true}); }, "top_k");
  expect_invalid_argument([&] { TopKPlan(c, {int64_t(1) << 31, 8, 2, true}); }, "logits");
  expect_invalid_argument([&] { TopKPlan(c, {4, TopKProblem::max_experts + 1, 2, true}); }, "experts");
  expect_invalid_argument([&] { TopKPlan(c, {4, 128, TopKProblem::max_top_k + 1, true}); }, "top_k");
  const TopKPlan plan(c, {4, 8, 2, true});
  EXPECT_EQ(plan.sizes().logits, 4u * 8 * 4);
  EXPECT_EQ(plan.sizes().ids, 4u * 2 * 4);
  Buffer logits = c.create_buffer(4 * 8 * 4), out = c.create_buffer(2 * 4 * 2 * 4);
  const BufferView ids = out.view(0, 32), weights = out.view(32, 32);
  expect_invalid_argument([&] { plan.check({logits.view(0, 4 * 8 * 4 - 4), ids, weights}); }, "logits");
  expect_invalid_argument([&] { plan.check({logits.view(), out.view(0, 28), weights}); }, "ids");
  expect_invalid_argument([&] { plan.check({logits.view(), ids, {}}); }, "weights");
  // Each written operand against every other, each pair once, the earlier written one named first.
  expect_invalid_argument([&] { plan.check({logits.view(), out.view(0, 32), out.view(16, 32)}); },
                          "top_k: ids overlaps weights");
  Buffer both = c.create_buffer(4 * 8 * 4 + 32);
  expect_invalid_argument([&] { plan.check({both.view(0, 4 * 8 * 4), both.view(4 * 8 * 4 - 4, 32), weights}); },
                          "top_k: ids overlaps logits");
  expect_invalid_argument([&] { plan.check({both.view(0, 4 * 8 * 4), ids, both.view(4 * 8 * 4 - 4, 32)}); },
                          "top_k: weights overlaps logits");
  EXPECT_EQ(plan.sizes().weights, 4u * 2 * 4);
  expect_invalid_argument([&] { plan.record(VK_NULL_HANDLE, {logits.view(), ids, weights}); }, "command buffer");
  // The command buffer is refused first, whatever the views.
  expect_invalid_argument([&] { plan.record(VK_NULL_HANDLE, {{}, ids, weights}); }, "command buffer");
  plan.check({logits.view(), ids, weights});
  // No tokens: nothing to run, but the views are still checked.
  const TopKPlan empty(c, {0, 8, 2, true});
  EXPECT_EQ(empty.sizes().ids, 0u);
  expect_invalid_argument([&] { empty.check({{}, ids, weights}); }, "logits");
  empty.check({logits.view(0, 0), out.view(0, 0), out.view(32, 0)});
}

// ----- the backward ------------------------------------------------------------------------------------

struct BackwardInputs {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  std::vector<float> weights, d_weights;
};

// Random logits (N(0, 2)), the reference forward's ids and weights for them, d_weights N(0, 1).
BackwardInputs random_inputs(const TopKProblem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f), g(0.0f, 1.0f);
  BackwardInputs in;
  in.logits.resize(size_t(p.tokens * p.experts));
  for (float& v : in.logits) v = d(rng);
  const reference::TopK fwd = reference::top_k(p, in.logits);
  in.ids = fwd.ids;
  in.weights = fwd.weights;
  in.d_weights.resize(in.ids.size());
  for (float& v : in.d_weights) v = g(rng);
  return in;
}

// Runs TopKBackwardPlan with every view guarded (so nothing outside them is touched); d_logits starts as
// `initial`, or as NaN when that is empty (so a word left unwritten shows).
std::vector<float> run_backward(Context& ctx, const TopKProblem& p, const BackwardInputs& in,
                                const TopKBackwardOptions& options = {}, const std::vector<float>& initial = {}) {
  Guarded logits = guarded_floats(ctx, in.logits), weights = guarded_floats(ctx, in.weights),
          d_weights = guarded_floats(ctx, in.d_weights);
  Guarded ids(ctx, in.ids.size() * 4);
  ids.set(in.ids.data(), in.ids.size() * 4);
  Guarded d_logits = guarded_floats(
      ctx, initial.empty() ? std::vector<float>(in.logits.size(), std::numeric_limits<float>::quiet_NaN()) : initial);
  top_k_backward(ctx, p, {logits.view(), ids.view(), weights.view(), d_weights.view(), d_logits.view()}, options);
  for (const Guarded* g : {&logits, &ids, &weights, &d_weights, &d_logits}) EXPECT_TRUE(g->guards_intact());
  return floats(d_logits);
}

// Per token, within a few float ulps of the scale of its terms (sum |d_weights|): the device sums in fp32
// and its exp is not exact; every element of `got` is compared, `base` (accumulate) added to the want.
void expect_gradient(const TopKProblem& p, const BackwardInputs& in, const std::vector<float>& got,
                     const std::string& what, const std::vector<float>& base = {}) {
  const std::vector<double> want = reference::top_k_backward(p, in.logits, in.ids, in.weights, in.d_weights);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (int64_t t = 0; t < p.tokens; ++t) {
    double scale = 0;
    for (int64_t j = 0; j < p.top_k; ++j) scale += std::fabs(in.d_weights[size_t(t * p.top_k + j)]);
    for (int64_t e = 0; e < p.experts; ++e) {
      const size_t i = size_t(t * p.experts + e);
      const double w = want[i] + (base.empty() ? 0.0 : base[i]);
      EXPECT_NEAR(got[i], w, 1e-5 * scale + 1e-6 * std::fabs(w)) << what << ": token " << t << ", expert " << e;
    }
  }
}

struct BackwardCase {
  int64_t experts, top_k;
  bool renormalize;
};

class TopKBackwardTest : public DeviceTest, public ::testing::WithParamInterface<BackwardCase> {};

// Each shape at 1, 7 and 33 tokens (odd, and past one workgroup's 32 invocations on CPU SIMD groups). A
// softmax's gradient sums to 0 over a token's experts (the weights add up to 1, renormalized): checked on
// the device's own numbers too.
TEST_P(TopKBackwardTest, MatchesTheReference) {
  const BackwardCase c = GetParam();
  for (const int64_t tokens : {1, 7, 33}) {
    const TopKProblem p{tokens, c.experts, c.top_k, c.renormalize};
    const BackwardInputs in = random_inputs(p, uint32_t(tokens * 31 + c.experts * 7 + c.top_k));
    const std::vector<float> got = run_backward(ctx(), p, in);
    const std::string what = "T = " + std::to_string(tokens);
    expect_gradient(p, in, got, what);
    for (int64_t t = 0; t < tokens; ++t) {
      double sum = 0, scale = 0;
      for (int64_t e = 0; e < c.experts; ++e) sum += got[size_t(t * c.experts + e)];
      for (int64_t j = 0; j < c.top_k; ++j) scale += std::fabs(in.d_weights[size_t(t * c.top_k + j)]);
      EXPECT_NEAR(sum, 0.0, 1e-5 * scale) << what << ": token " << t;
      // Renormalized, an expert no slot chose has no gradient at all.
      if (c.renormalize)
        for (int64_t e = 0; e < c.experts; ++e) {
          const int32_t* ids = &in.ids[size_t(t * c.top_k)];
          if (std::find(ids, ids + c.top_k, int32_t(e)) == ids + c.top_k)
            EXPECT_EQ(got[size_t(t * c.experts + e)], 0.0f) << what << ": token " << t << ", expert " << e;
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopKBackwardTest,
                         ::testing::Values(BackwardCase{1, 1, true}, BackwardCase{1, 1, false}, BackwardCase{5, 1, true},
                                           BackwardCase{5, 2, false}, BackwardCase{5, 5, true}, BackwardCase{5, 5, false},
                                           BackwardCase{64, 1, false}, BackwardCase{64, 2, true},
                                           BackwardCase{64, 8, false}, BackwardCase{64, 64, true},
                                           BackwardCase{64, 64, false}),
                         [](const auto& info) {
                           const BackwardCase& c = info.param;
                           return "E" + std::to_string(c.experts) + "_k" + std::to_string(c.top_k) +
                                  (c.renormalize ? "_renorm" : "_softmax");
                         });

// The forward's rows of ties, NaN and infinities, with its own ids and weights: a NaN logit (-inf) has
// no softmax mass, so no gradient; all -inf is the uniform softmax; two +inf logits share it.
TEST_F(DeviceTest, TopKBackwardTiesNaNAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  BackwardInputs in;
  in.logits = {
      1, 3, 3, 0, 3, 2,                    // a three-way tie at the top
      nan, -1, nan, -2, -inf, -3,          // NaN ranks as -inf
      -inf, -inf, -inf, -inf, -inf, -inf,  // all -inf
      0, inf, 1, inf, -inf, 2,             // two +inf
      nan, nan, nan, nan, nan, 5,          // NaN chosen (top_k 3 > one number)
  };
  in.d_weights = {0.5f, -1, 2, -0.25f, 3, 1, 1, 1, 1, 2, -2, 0.5f, 1, 0.75f, -3};
  for (const bool renormalize : {true, false}) {
    const TopKProblem p{5, 6, 3, renormalize};
    const reference::TopK fwd = reference::top_k(p, in.logits);
    in.ids = fwd.ids;
    in.weights = fwd.weights;
    const std::vector<float> got = run_backward(ctx(), p, in);
    expect_gradient(p, in, got, renormalize ? "renormalized" : "softmax");
    for (float v : got) EXPECT_TRUE(std::isfinite(v));
    for (const size_t nan_logit : {6u, 8u, 24u, 25u, 26u}) EXPECT_EQ(got[nan_logit], 0.0f) << "d_logits[" << nan_logit << "]";
    // Uniform over 6 (all -inf), 3 chosen with d_weights 1, 1, 1: s = 1/2 (softmax) or 1 (renormalized).
    EXPECT_NEAR(got[12], renormalize ? 0.0f : 1.0f / 6 * (1 - 0.5f), 1e-7f);
    EXPECT_NEAR(got[15], renormalize ? 0.0f : 1.0f / 6 * (0 - 0.5f), 1e-7f);
  }
}

// Ids the app wrote: -1, past the experts, INT_MIN / INT_MAX, an expert named twice, a token of no valid
// id. Nothing outside the views is touched; a bad slot adds nothing; the result is the reference's for the
// very same ids.
TEST_F(DeviceTest, TopKBackwardSkipsBadIds) {
  const int64_t T = 4, E = 5, k = 3;
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  for (const bool renormalize : {true, false}) {
    const TopKProblem p{T, E, k, renormalize};
    BackwardInputs in = random_inputs(p, 11);
    in.ids = {2, -1, 0,  E, 4, E + 100,  lo, hi, -7,  3, 1, 3};
    // A bad slot's weight and d_weight are not read into anything.
    in.weights[1] = in.d_weights[1] = 1e30f;
    const std::vector<float> got = run_backward(ctx(), p, in);
    expect_gradient(p, in, got, renormalize ? "renormalized" : "softmax");
    for (int64_t e = 0; e < E; ++e) EXPECT_EQ(got[size_t(2 * E + e)], 0.0f) << "token 2 (no valid id), expert " << e;
    // Token 0 again with a valid slot of weight and d_weight 0 for its -1: the same bits.
    BackwardInputs zero_slot = in;
    zero_slot.ids[1] = 0;
    zero_slot.weights[1] = zero_slot.d_weights[1] = 0;
    const std::vector<float> same = run_backward(ctx(), p, zero_slot);
    for (int64_t e = 0; e < E; ++e) EXPECT_EQ(got[size_t(e)], same[size_t(e)]) << "expert " << e;
  }
}

// accumulate adds to what d_logits holds; without it d_logits' old contents (the guard's poison) do not
// matter.
TEST_F(DeviceTest, TopKBackwardAccumulates) {
  for (const bool renormalize : {true, false}) {
    const TopKProblem p{33, 12, 3, renormalize};
    const BackwardInputs in = random_inputs(p, 3);
    std::vector<float> initial(in.logits.size());
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& v : initial) v = u(rng);
    TopKBackwardOptions add;
    add.accumulate = true;
    TopKBackwardPlan plan(ctx(), p, add);
    EXPECT_TRUE(plan.options().accumulate);
    expect_gradient(p, in, run_backward(ctx(), p, in, add, initial), "accumulate", initial);
    expect_gradient(p, in, run_backward(ctx(), p, in, {}, initial), "overwrite");
  }
}

// The forward then the backward in one command buffer, ordered by the app's barrier: the backward reads
// the forward's ids and weights from the device.
TEST_F(DeviceTest, TopKBackwardAfterTheForward) {
  Context& c = ctx();
  const TopKProblem p{40, 16, 4, false};
  const BackwardInputs in = random_inputs(p, 8);
  const TopKPlan forward(c, p);
  const TopKBackwardPlan backward(c, p);
  const TopKBackwardSizes sz = backward.sizes();
  Buffer logits = c.create_buffer(sz.logits), ids = c.create_buffer(sz.ids), weights = c.create_buffer(sz.weights),
         d_weights = c.create_buffer(sz.d_weights), d_logits = c.create_buffer(sz.d_logits);
  logits.upload(in.logits.data(), sz.logits);
  d_weights.upload(in.d_weights.data(), sz.d_weights);
  c.submit_and_wait([&](VkCommandBuffer cb) {
    forward.record(cb, {logits.view(), ids.view(), weights.view()});
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         nullptr, 0, nullptr);
    backward.record(cb, {logits.view(), ids.view(), weights.view(), d_weights.view(), d_logits.view()});
  });
  BackwardInputs seen = in;
  ids.download(seen.ids.data(), sz.ids);
  weights.download(seen.weights.data(), sz.weights);
  EXPECT_EQ(seen.ids, in.ids);
  std::vector<float> got(in.logits.size());
  d_logits.download(got.data(), sz.d_logits);
  expect_gradient(p, seen, got, "after the forward");
}

TEST_F(DeviceTest, TopKBackwardRefusesBadArguments) {
  Context& c = ctx();
  expect_invalid_argument([&] { TopKBackwardPlan(c, {-1, 8, 2, true}); }, "top_k_backward: tokens");
  expect_invalid_argument([&] { TopKBackwardPlan(c, {4, 0, 1, true}); }, "top_k_backward: experts");
  expect_invalid_argument([&] { TopKBackwardPlan(c, {4, 8, 9, false}); }, "top_k_backward: top_k");
  expect_invalid_argument([&] { TopKBackwardPlan(c, {4, 128, TopKProblem::max_top_k + 1, true}); }, "top_k_backward: top_k");
  expect_invalid_argument([&] { TopKBackwardPlan(c, {int64_t(1) << 31, 8, 2, true}); }, "top_k_backward: logits");
  const TopKBackwardPlan plan(c, {4, 8, 2, true});
  const TopKBackwardSizes sz = plan.sizes();
  EXPECT_EQ(sz.logits, 4u * 8 * 4);
  EXPECT_EQ(sz.d_logits, 4u * 8 * 4);
  EXPECT_EQ(sz.ids, 4u * 2 * 4);
  EXPECT_EQ(sz.weights, 4u * 2 * 4);
  EXPECT_EQ(sz.d_weights, 4u * 2 * 4);
  // The inputs back to back, room for a d_logits view over each; out past them all.
  Buffer in = c.create_buffer(128 + 3 * 32 + 128), out = c.create_buffer(128);
  const TopKBackwardOperands ok{in.view(0, 128), in.view(128, 32), in.view(160, 32), in.view(192, 32), out.view(0, 128)};
  plan.check(ok);
  // The inputs may share words (they are only read).
  plan.check({ok.logits, ok.ids, ok.weights, ok.weights, ok.d_logits});
  const char* names[] = {"logits", "ids", "weights", "d_weights", "d_logits"};
  BufferView TopKBackwardOperands::*fields[] = {&TopKBackwardOperands::logits, &TopKBackwardOperands::ids,
                                                &TopKBackwardOperands::weights, &TopKBackwardOperands::d_weights,
                                                &TopKBackwardOperands::d_logits};
  for (size_t i = 0; i < 5; ++i) {
    TopKBackwardOperands short_view = ok, missing = ok, overlapping = ok;
    (short_view.*fields[i]).size -= 4;
    missing.*fields[i] = {};
    expect_invalid_argument([&] { plan.check(short_view); }, std::string("top_k_backward: ") + names[i]);
    expect_invalid_argument([&] { plan.check(missing); }, names[i]);
    if (i == 4) continue;
    // d_logits from the start of each input in turn (the first it meets in their order).
    overlapping.d_logits = in.view((ok.*fields[i]).offset, 128);
    expect_invalid_argument([&] { plan.check(overlapping); }, std::string("d_logits overlaps ") + names[i]);
  }
  expect_invalid_argument([&] { plan.record(VK_NULL_HANDLE, ok); }, "top_k_backward: command buffer");
  // No tokens: nothing to run, but the views are still checked.
  const TopKBackwardPlan empty(c, {0, 8, 2, false});
  EXPECT_EQ(empty.sizes().d_logits, 0u);
  const TopKBackwardOperands none{in.view(0, 0), in.view(0, 0), in.view(0, 0), in.view(0, 0), out.view(0, 0)};
  TopKBackwardOperands no_d_logits = none;
  no_d_logits.d_logits = {};
  expect_invalid_argument([&] { empty.check(no_d_logits); }, "d_logits");
  top_k_backward(c, {0, 8, 2, false}, none);
}

// On CPU devices the plan refuses what would pass the driver's loop budget (tiling.hpp): the experts' walk
// and the scans of a token's 64 distinct slots (renormalized), the softmax's two passes more (k = 1).
// The largest shapes inside it run to the end: every expert written, over 16 tokens of distinct ids.
TEST_F(DeviceTest, TopKBackwardLoopBudget) {
  Context& c = ctx();
  if (c.info().type != VK_PHYSICAL_DEVICE_TYPE_CPU) GTEST_SKIP() << "the loop budget is a CPU driver's";
  const TopKProblem largest[] = {{16, 61371, 64, true}, {16, 21842, 1, false}};
  for (const TopKProblem& p : largest) {
    TopKProblem past = p;
    past.experts += 1;
    expect_refused([&] { TopKBackwardPlan(c, past); }, Status::unsupported,
                   "top_k_backward: top_k = " + std::to_string(p.top_k) + " over experts = " + std::to_string(past.experts));
    const BackwardInputs in = random_inputs(p, 5);
    expect_gradient(p, in, run_backward(c, p, in), "experts = " + std::to_string(p.experts));
  }
}

// reference::top_k_backward is the derivative of sum_j d_weights[j] * weights[j] for fixed ids, the
// weights as the forward defines them (the softmax over all experts of the slot's logit, or over the
// valid slots' logits renormalized), perturbed in float64 logit by logit. Duplicate and bad ids too.
double weighted_sum(const TopKProblem& p, const std::vector<double>& logits, const std::vector<int32_t>& ids,
                    const std::vector<float>& d_weights, std::vector<float>* weights = nullptr) {
  double f = 0;
  for (int64_t t = 0; t < p.tokens; ++t) {
    const double* row = &logits[size_t(t * p.experts)];
    const int32_t* id = &ids[size_t(t * p.top_k)];
    auto valid = [&](int64_t j) { return id[j] >= 0 && id[j] < p.experts; };
    const double top = *std::max_element(row, row + p.experts);
    double denom = 0;
    if (p.renormalize) {
      for (int64_t j = 0; j < p.top_k; ++j) denom += valid(j) ? std::exp(row[id[j]] - top) : 0.0;
    } else {
      for (int64_t e = 0; e < p.experts; ++e) denom += std::exp(row[e] - top);
    }
    for (int64_t j = 0; j < p.top_k; ++j) {
      const double w = valid(j) ? std::exp(row[id[j]] - top) / denom : 0.0;
      if (weights) (*weights)[size_t(t * p.top_k + j)] = float(w);
      f += d_weights[size_t(t * p.top_k + j)] * w;
    }
  }
  return f;
}

TEST(TopKBackwardReference, MatchesFiniteDifferences) {
  for (const bool renormalize : {true, false})
    for (const bool bad_ids : {false, true}) {
      const TopKProblem p{3, 7, 3, renormalize};
      BackwardInputs in = random_inputs(p, bad_ids ? 21 : 20);
      if (bad_ids) in.ids = {4, 4, 1,  -1, 6, 7,  0, 2, 5};
      std::vector<double> logits(in.logits.begin(), in.logits.end());
      in.weights.assign(in.ids.size(), 0.0f);
      weighted_sum(p, logits, in.ids, in.d_weights, &in.weights);
      const std::vector<double> grad = reference::top_k_backward(p, in.logits, in.ids, in.weights, in.d_weights);
      for (size_t i = 0; i < logits.size(); ++i) {
        const double keep = logits[i], h = 1e-4;
        logits[i] = keep + h;
        const double up = weighted_sum(p, logits, in.ids, in.d_weights);
        logits[i] = keep - h;
        const double down = weighted_sum(p, logits, in.ids, in.d_weights);
        logits[i] = keep;
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 2e-6) << (renormalize ? "renormalized" : "softmax")
                                                          << (bad_ids ? ", bad ids" : "") << ": logit " << i;
      }
    }
}

}  // namespace
}  // namespace vkgmm::test
