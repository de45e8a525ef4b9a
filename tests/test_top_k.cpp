// Top-k routing (TopKPlan) on the device against vkgmm::reference::top_k: random logits over a sweep of
// tokens, experts and k (odd sizes, k = 1 and k = E), with and without renormalisation; ties, NaN and
// infinities; guard regions around the outputs; and the arguments refused before any GPU work.
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
  expect_invalid_argument([&] { plan.check({logits.view(), out.view(0, 32), out.view(16, 32)}); }, "overlaps");
  expect_invalid_argument([&] { plan.record(VK_NULL_HANDLE, {logits.view(), ids, weights}); }, "command buffer");
  plan.check({logits.view(), ids, weights});
  // No tokens: nothing to run, but the views are still checked.
  const TopKPlan empty(c, {0, 8, 2, true});
  EXPECT_EQ(empty.sizes().ids, 0u);
  expect_invalid_argument([&] { empty.check({{}, ids, weights}); }, "logits");
  empty.check({logits.view(0, 0), out.view(0, 0), out.view(32, 0)});
}

}  // namespace
}  // namespace vkgmm::test
