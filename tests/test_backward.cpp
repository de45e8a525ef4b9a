// The gmm backward on the device: against the reference, and against central finite differences.
#include <cmath>

#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

struct BackwardCase {
  bool transpose;
  bool shard;
  Schedule schedule;
};

class BackwardTest : public DeviceTest, public ::testing::WithParamInterface<BackwardCase> {};

TEST_P(BackwardTest, MatchesReference) {
  const BackwardCase& c = GetParam();
  std::mt19937 rng(31 + c.transpose + 2 * c.shard);
  GmmProblem p;
  p.m = 70;
  p.k = 18;
  p.n = 14;
  p.group_sizes = make_group_sizes(Sizes::empty_ends, 6, 60, rng);  // 10 rows past the groups
  p.transpose_rhs = c.transpose;
  p.schedule = c.schedule;
  int64_t g_local = 6;
  if (c.shard) {
    p.group_offset = 2;
    p.num_rhs_groups = g_local = 3;
  }
  auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto rhs = random_values(size_t(g_local) * p.k * p.n, DType::f32, rng);
  auto d_out = random_values(size_t(p.m) * p.n, DType::f32, rng);
  auto got = run_backward(ctx(), p, lhs, rhs, d_out);
  auto want = reference::gmm_backward(p, lhs, rhs, d_out);
  EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, 1e-3, 1e-5)) << "d_lhs";
  EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, 1e-3, 1e-5)) << "d_rhs";
  const reference::Gradients dev = run_backward_device(ctx(), p, lhs, rhs, d_out);
  EXPECT_TRUE(same_bits(dev.d_lhs, got.d_lhs)) << "d_lhs, device group sizes";
  EXPECT_TRUE(same_bits(dev.d_rhs, got.d_rhs)) << "d_rhs, device group sizes";
}

INSTANTIATE_TEST_SUITE_P(Variants, BackwardTest,
                         ::testing::Values(BackwardCase{false, false, Schedule::direct},
                                           BackwardCase{true, false, Schedule::shared},
                                           BackwardCase{false, true, Schedule::shared},
                                           BackwardCase{true, true, Schedule::direct}),
                         [](const auto& info) {
                           return std::string(info.param.transpose ? "T" : "N") + (info.param.shard ? "_shard" : "") +
                                  "_" + schedule_name(info.param.schedule);
                         });

// The device's gradients of loss = sum(gmm(lhs, rhs) * w) against central differences of that loss,
// each loss evaluated by the device's own forward gmm.
TEST_F(DeviceTest, BackwardFiniteDifferences) {
  for (bool transpose : {false, true}) {
    std::mt19937 rng(17 + transpose);
    GmmProblem p;
    p.m = 9;
    p.k = 4;
    p.n = 3;
    p.group_sizes = {4, 0, 5};
    p.transpose_rhs = transpose;
    auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
    auto rhs = random_values(size_t(3) * p.k * p.n, DType::f32, rng);
    auto w = random_values(size_t(p.m) * p.n, DType::f32, rng);
    auto loss = [&](const std::vector<float>& l, const std::vector<float>& r) {
      auto out = run_gmm(ctx(), p, l, r);
      double s = 0;
      for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * w[i];
      return s;
    };
    auto grads = run_backward(ctx(), p, lhs, rhs, w);  // d_out = dloss/dout = w
    const float h = 1.0f / 64;                           // exact in f32; the loss is linear in each input
    for (size_t i = 0; i < lhs.size(); ++i) {
      auto lp = lhs, lm = lhs;
      lp[i] += h;
      lm[i] -= h;
      EXPECT_NEAR(grads.d_lhs[i], (loss(lp, rhs) - loss(lm, rhs)) / (2 * h), 2e-3) << "d_lhs " << i;
    }
    for (size_t i = 0; i < rhs.size(); ++i) {
      auto rp = rhs, rm = rhs;
      rp[i] += h;
      rm[i] -= h;
      EXPECT_NEAR(grads.d_rhs[i], (loss(lhs, rp) - loss(lhs, rm)) / (2 * h), 2e-3) << "d_rhs " << i;
    }
  }
}

// GmmBackwardPlan::sizes(): each operand's exact bytes (odd 16-bit counts included), for a sharded
// problem with three element types (d_out has out's type, d_lhs lhs's, d_rhs rhs's); and the same as the
// two plans it is made of.
TEST_F(DeviceTest, BackwardSizes) {
  for (bool transpose : {false, true}) {
    GmmProblem p;
    p.m = 11;
    p.k = 5;
    p.n = 3;
    p.group_sizes = {4, 0, 5, 1};
    p.group_offset = 1;
    p.num_rhs_groups = 2;
    p.transpose_rhs = transpose;
    p.lhs_type = DType::f32;
    p.rhs_type = DType::bf16;
    p.out_type = DType::f16;
    const GmmBackwardPlan plan(ctx(), p);
    const GmmBackwardSizes s = plan.sizes();
    // Exactly the elements' bytes, odd 16-bit counts included (33 f16 elements of d_out).
    EXPECT_EQ(s.lhs, 11u * 5 * 4);
    EXPECT_EQ(s.rhs, 2u * 5 * 3 * 2);
    EXPECT_EQ(s.d_out, 11u * 3 * 2);
    EXPECT_EQ(s.d_lhs, 11u * 5 * 4);
    EXPECT_EQ(s.d_rhs, s.rhs);
    const OperandSizes a = plan.d_lhs_plan().sizes(), b = plan.d_rhs_plan().sizes();
    EXPECT_EQ(s.lhs, b.lhs);
    EXPECT_EQ(s.rhs, a.rhs);
    EXPECT_EQ(s.d_out, a.lhs);
    EXPECT_EQ(s.d_out, b.rhs);
    EXPECT_EQ(s.d_lhs, a.out);
    EXPECT_EQ(s.d_rhs, b.out);
    EXPECT_EQ(plan.metadata_bytes(), plan.d_lhs_plan().metadata_bytes() + plan.d_rhs_plan().metadata_bytes());
    EXPECT_GT(plan.metadata_bytes(), 0u);
  }
}

}  // namespace
}  // namespace vkgmm::test
