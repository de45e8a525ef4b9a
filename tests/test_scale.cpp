// Problems past one storage-buffer binding (maxStorageBufferRange: 128 MiB on lavapipe), grids past
// 65535 workgroups, and many rows and groups, kept quick by making the other dimensions small.
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

// Cheap deterministic values in [-1, 1) (64M of them must not take seconds to make).
std::vector<float> pattern(size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = float(int32_t(x >> 8) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

// gmm with rhs [8, 4096, 2048] f32: 256 MiB, bound in parts.
TEST_F(DeviceTest, GmmRhsLargerThanOneBinding) {
  GmmProblem p;
  p.m = 12;
  p.k = 4096;
  p.n = 2048;
  p.group_sizes = {1, 0, 3, 1, 2, 1, 1, 2};  // the last row belongs to no group
  const size_t rhs_count = size_t(8) * p.k * p.n;
  ASSERT_GT(rhs_count * 4, ctx().info().max_storage_buffer_range) << "the case must exceed one binding here";
  auto lhs = pattern(size_t(p.m) * p.k, 1), rhs = pattern(rhs_count, 2);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), reference::gmm(p, lhs, rhs), 2e-3, 1e-5));
}

// The same weights routed by expert ids, per slot and combined: lhs gathered, rhs read in parts.
TEST_F(DeviceTest, RoutedGmmRhsLargerThanOneBinding) {
  for (bool combine : {false, true}) {
    GmmProblem p;
    p.m = 3;
    p.k = 4096;
    p.n = 2048;
    p.num_rhs_groups = 8;
    p.routing = {2, false, combine, 8};
    const std::vector<int32_t> ids = {7, 0, 3, -1, 5, 7};
    const std::vector<float> weights = {0.25f, 0.75f, 1.0f, 0.0f, 0.5f, 0.5f};
    auto lhs = pattern(size_t(p.m) * p.k, 3), rhs = pattern(size_t(8) * p.k * p.n, 4);
    const std::vector<float> w = combine ? weights : std::vector<float>{};
    EXPECT_TRUE(all_close(run_gmm_routed(ctx(), p, lhs, rhs, ids, w), reference::gmm_routed(p, lhs, rhs, ids, w),
                          2e-3, 1e-5))
        << (combine ? "combined" : "per slot");
  }
}

// tgmm producing out [8, 4096, 2048] f32 (256 MiB) with existing_out of the same size.
TEST_F(DeviceTest, TgmmOutLargerThanOneBinding) {
  TgmmProblem p;
  p.m = 12;
  p.k = 4096;
  p.n = 2048;
  p.group_sizes = {1, 2, 0, 1, 2, 1, 2, 3};
  p.existing_out = true;
  const size_t out_count = size_t(8) * p.k * p.n;
  ASSERT_GT(out_count * 4, ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.k) * p.m, 3), rhs = pattern(size_t(p.m) * p.n, 4), ex = pattern(out_count, 5);
  EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs, ex), reference::tgmm(p, lhs, rhs, ex), 1e-3, 1e-5));
}

// m = 200000 rows in G = 512 groups; a 2-row tiling makes ~100k visits, a grid folded past 65535.
TEST_F(DeviceTest, GmmManyRowsManyGroups) {
  std::mt19937 rng(6);
  GmmProblem p;
  p.m = 200000;
  p.k = 8;
  p.n = 8;
  p.group_sizes = make_group_sizes(Sizes::random, 512, p.m, rng);
  auto lhs = pattern(size_t(p.m) * p.k, 6), rhs = pattern(size_t(512) * p.k * p.n, 7);
  auto want = reference::gmm(p, lhs, rhs);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), want, 1e-3, 1e-5)) << "automatic tiling";
  p.tiling = TilingChoice::of(Tiling{2, 8, 8});
  GmmPlan plan(ctx(), p);
  EXPECT_GT(plan.num_tiles(), 65535);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), want, 1e-3, 1e-5)) << "2-row tiles";
}

TEST_F(DeviceTest, TgmmManyRowsManyGroups) {
  std::mt19937 rng(8);
  TgmmProblem p;
  p.m = 200000;
  p.k = 8;
  p.n = 8;
  p.group_sizes = make_group_sizes(Sizes::random, 512, p.m, rng);
  auto lhs = pattern(size_t(p.k) * p.m, 8), rhs = pattern(size_t(p.m) * p.n, 9);
  EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs), reference::tgmm(p, lhs, rhs), 1e-3, 1e-5));
}

// The split layout with 16-bit types and odd element offsets in the words (packed access in parts).
TEST_F(DeviceTest, GmmLargeBf16Rhs) {
  GmmProblem p;
  p.m = 3;
  p.k = 8191;  // odd: rows of 16-bit elements straddle words
  p.n = 8193;
  p.group_sizes = {1, 2};
  p.rhs_type = DType::bf16;
  p.out_type = DType::bf16;
  ASSERT_GT(size_t(2) * p.k * p.n * 2, ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.m) * p.k, 10), rhs = pattern(size_t(2) * p.k * p.n, 11);
  for (auto& x : rhs) x = round_to(DType::bf16, x);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), reference::gmm(p, lhs, rhs), 1e-3, 1e-2));
}

}  // namespace
}  // namespace vkgmm::test
