// The shared schedule's kernel shapes (host/tiling.cpp): the register tile from the device's register
// file, groups of 4 rows and columns, steps of whole 4-element chunks within shared memory; and the
// routed calls' expected group sizes.
#include <gtest/gtest.h>

#include "tiling.hpp"

#include <algorithm>
#include <numeric>

namespace vkgmm {
namespace {

DeviceInfo gpu(uint32_t vector_registers, uint32_t shared_bytes = 65536, uint32_t invocations = 1024) {
  DeviceInfo info;
  info.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  info.subgroup_size = 64;
  info.vector_registers = vector_registers;
  info.max_shared_memory = shared_bytes;
  info.max_workgroup_invocations = invocations;
  return info;
}

KernelShape shared_shape(const DeviceInfo& info, int64_t rows, int64_t step, int64_t cols, uint32_t halves = 1) {
  return make_kernel_shape(rows, step, cols, 4096, 1024, 1024, Schedule::shared, info, "gmm", 1, 1, halves);
}

TEST(SharedTiling, RegisterTileFollowsTheRegisterFile) {
  auto tile = [](uint32_t regs) {
    const RegisterTile t = shared_register_tile(gpu(regs));
    return std::pair<uint32_t, uint32_t>{t.rows, t.cols};
  };
  EXPECT_EQ(tile(0), std::make_pair(8u, 8u));    // unknown: 8 x 8
  EXPECT_EQ(tile(512), std::make_pair(8u, 8u));  // RDNA2, wave64
  EXPECT_EQ(tile(256), std::make_pair(8u, 8u));  // GCN: 2 waves of 128 registers
  EXPECT_EQ(tile(160), std::make_pair(8u, 4u));
  EXPECT_EQ(tile(100), std::make_pair(4u, 4u));
  DeviceInfo cpu = gpu(0);
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  EXPECT_EQ(shared_register_tile(cpu).rows, 4u);
  EXPECT_EQ(shared_register_tile(cpu).cols, 4u);
}

TEST(SharedTiling, PresetShapeIs16x16InvocationsOf8x8) {
  const KernelShape s = shared_shape(gpu(512), 128, 16, 128);
  EXPECT_TRUE(s.use_shared);
  EXPECT_EQ(s.rows, 128u);
  EXPECT_EQ(s.cols, 128u);
  EXPECT_EQ(s.step, 16u);
  EXPECT_EQ(s.tx, 16u);
  EXPECT_EQ(s.ty, 16u);
  EXPECT_EQ(s.rm, 8u);
  EXPECT_EQ(s.rn, 8u);
  EXPECT_EQ(s.shared_a, 128u * 16u);
  EXPECT_EQ(s.shared_b, 16u * 128u);
}

TEST(SharedTiling, ShortTilesTake4RowsPerInvocation) {
  const KernelShape s = shared_shape(gpu(512), 16, 16, 128);
  EXPECT_EQ(s.rows, 16u);
  EXPECT_EQ(s.rm, 4u);
  EXPECT_EQ(s.rn, 8u);
  EXPECT_EQ(shared_shape(gpu(512), 32, 16, 128).rm, 8u);
  EXPECT_EQ(shared_shape(gpu(512), 64, 16, 128).rm, 8u);
}

TEST(SharedTiling, StepKeepsEightChunksInFlightPerInvocation) {
  // 128 x 128 of 8 x 8: 256 invocations stage (128 + 128) * 16 / 4 chunks, 4 each: the step stays.
  EXPECT_EQ(shared_shape(gpu(512), 128, 16, 128).step, 16u);
  EXPECT_EQ(shared_shape(gpu(512), 128, 32, 128).step, 32u);
  // 32 x 128 of 8 x 8: 64 invocations would hold 10 each with a step of 16; 5 with 8.
  const KernelShape s = shared_shape(gpu(512), 32, 16, 128);
  EXPECT_EQ(s.invocations(), 64u);
  EXPECT_EQ(s.step, 8u);
  EXPECT_EQ(s.shared_a, 32u * 8u);
  // 64 invocations of 16 x 16: a step of 8 is 8 chunks each.
  EXPECT_EQ(shared_shape(gpu(512, 65536, 64), 128, 64, 128).step, 8u);
  // Never below one chunk along K: 32 invocations of 16 x 16 on 64 x 128 hold 6 even so.
  EXPECT_EQ(shared_shape(gpu(512, 65536, 32), 64, 64, 128).step, 4u);
}

TEST(SharedTiling, OddTilesBecomeGroupsOf4AndStepsOfWholeChunks) {
  const KernelShape s = shared_shape(gpu(512), 3, 1, 5);
  EXPECT_EQ(s.rows, 4u);
  EXPECT_EQ(s.cols, 8u);
  EXPECT_EQ(s.rm % 4, 0u);
  EXPECT_EQ(s.rn % 4, 0u);
  EXPECT_EQ(s.step, 4u);
  EXPECT_EQ(s.tx * s.rn, s.cols);
  EXPECT_EQ(s.ty * s.rm, s.rows);
}

TEST(SharedTiling, SwigluHalvesShareTheRegisterTile) {
  const KernelShape s = shared_shape(gpu(512), 128, 16, 64, 2);
  EXPECT_EQ(s.rm * s.rn * 2, 64u);
  EXPECT_EQ(s.invocations(), 256u);
  EXPECT_EQ(s.shared_b, 16u * 64u * 2u);
  // The automatic tiling asks for half the columns with SwiGLU.
  std::vector<int32_t> sizes(8, 512);
  const ActiveGroups groups{&sizes, 0, 8};
  EXPECT_EQ(gmm_auto_tiling(Schedule::shared, gpu(512), groups, true, 1024, 2).tn, 64);
  EXPECT_EQ(gmm_auto_tiling(Schedule::shared, gpu(512), groups, true, 1024, 1).tn, 128);
}

// A GPU's decode: each group of up to 8 rows in one visit, so that its weights are streamed once (a group
// of 5 rows in 2-row tiles would stream them 3 times); groups of 2 keep 2-row tiles. lavapipe's visits
// cost it about 2 rows each (measured): there 5 rows take 2-row tiles.
TEST(DirectTiling, GpuDecodeReadsEachGroupsWeightsOnce) {
  DeviceInfo cpu = gpu(0);
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  auto tm = [](const DeviceInfo& info, std::vector<int32_t> sizes) {
    const ActiveGroups groups{&sizes, 0, int64_t(sizes.size())};
    return gmm_auto_tiling(Schedule::direct, info, groups, true, 1024, 1, false).tm;
  };
  EXPECT_EQ(tm(gpu(512), {5, 5, 5, 1}), 8);
  EXPECT_EQ(tm(gpu(512), {3, 1, 0, 2}), 4);
  EXPECT_EQ(tm(gpu(512), {2, 2, 2, 2}), 2);
  EXPECT_EQ(tm(gpu(512), {8, 1, 1, 1}), 8);
  EXPECT_EQ(tm(cpu, {5, 5, 5, 1}), 2);
}

// Direct schedule, 32-row tiles over rhs [n, k]: 64 columns (32 x 8 per invocation) for element types,
// 128 (16 x 16) for block formats, whose per-column block walk then serves 16 rows.
TEST(DirectTiling, BlockFormatsKeep128ColumnsAt32Rows) {
  DeviceInfo cpu = gpu(0);
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  std::vector<int32_t> sizes(8, 512);
  const ActiveGroups groups{&sizes, 0, 8};
  const Tiling elements = gmm_auto_tiling(Schedule::direct, cpu, groups, false, 1024, 1, false);
  const Tiling blocks = gmm_auto_tiling(Schedule::direct, cpu, groups, false, 1024, 1, true);
  EXPECT_EQ(elements.tm, 32);
  EXPECT_EQ(elements.tn, 64);
  EXPECT_EQ(blocks.tm, 32);
  EXPECT_EQ(blocks.tn, 128);
  // rhs [k, n] and few-row visits are unchanged by the format.
  EXPECT_EQ(gmm_auto_tiling(Schedule::direct, cpu, groups, true, 1024, 1, true).tn, 128);
  std::vector<int32_t> decode(8, 3);
  const ActiveGroups few{&decode, 0, 8};
  EXPECT_EQ(gmm_auto_tiling(Schedule::direct, cpu, few, false, 1024, 1, true).tn,
            gmm_auto_tiling(Schedule::direct, cpu, few, false, 1024, 1, false).tn);
}

TEST(SharedTiling, StageFitsHalfTheSharedMemory) {
  // 128 x 128 tiles stage 1 KiB per step: 8 steps in half of 16 KiB.
  EXPECT_EQ(shared_shape(gpu(512, 16384), 128, 16, 128).step, 8u);
  // Too small for two workgroups: all of it.
  EXPECT_EQ(shared_shape(gpu(512, 6144), 128, 16, 128).step, 4u);
  EXPECT_THROW(shared_shape(gpu(512, 2048), 128, 16, 128), Error);
}

TEST(SharedTiling, FewInvocationsGetLargerRegisterTiles) {
  const KernelShape s = shared_shape(gpu(512, 65536, 64), 128, 16, 128);
  EXPECT_LE(s.invocations(), 64u);
  EXPECT_EQ(s.rows, 128u);
  EXPECT_EQ(s.cols, 128u);
  EXPECT_LE(s.rm * s.rn, 256u);
}

TEST(DecodeTiling, RoutedSizesFollowTheBinomial) {
  auto tm = [](int64_t T, int64_t top_k, int64_t E) {
    const std::vector<int32_t> sizes = routed_expected_sizes(T, top_k, E);
    return pick_tm(ActiveGroups{&sizes, 0, int64_t(sizes.size())}, 1, 32, 2);
  };
  // ids-decode: Binomial(8, 1/2) (routers concentrate: half the experts), rows 1 to 7.
  const std::vector<int32_t> d = routed_expected_sizes(8, 2, 8);
  ASSERT_EQ(d.size(), 64u);
  EXPECT_EQ(*std::min_element(d.begin(), d.end()), 1);
  EXPECT_EQ(*std::max_element(d.begin(), d.end()), 7);
  EXPECT_NEAR(std::accumulate(d.begin(), d.end(), 0) / 64.0, 4.0, 0.05);  // the mean, 2 T top_k / E
  // qwen3 (top-8 of 128): 1 token -> 1 row; 8 tokens -> Binomial(8, 1/8): 2-row visits; 64 tokens ->
  // ~8 rows, not 27 per local expert (every slot over a window of 19).
  EXPECT_EQ(tm(1, 8, 128), 1);
  EXPECT_EQ(tm(8, 8, 128), 2);
  EXPECT_EQ(tm(64, 8, 128), 8);
  // Every expert chosen by every token: T rows each.
  EXPECT_EQ(routed_expected_sizes(512, 8, 8), std::vector<int32_t>(64, 512));
  EXPECT_EQ(routed_expected_sizes(0, 8, 8), std::vector<int32_t>(64, 0));
}

TEST(DecodeTiling, DeviceSizesAreSpreadNotEven) {
  auto groups = [](const std::vector<int32_t>& s) { return ActiveGroups{&s, 0, int64_t(s.size())}; };
  // decode: 16 rows over 8 groups, Binomial(16, 1/8): one value per group, 0 to 5 rows, mean 2.
  const std::vector<int32_t> d = device_expected_sizes(16, 8, 8, 0);
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(*std::min_element(d.begin(), d.end()), 0);
  EXPECT_GE(*std::max_element(d.begin(), d.end()), 4);
  EXPECT_NEAR(std::accumulate(d.begin(), d.end(), 0) / 8.0, 2.0, 0.5);
  EXPECT_TRUE(std::is_sorted(d.begin(), d.end()));
  // A GPU's decode tile then holds the groups of up to 4 rows (all but the 1-in-16 tail) in one visit,
  // each streaming its group's weights once, where the mean alone (2 rows each) picked 2-row tiles, which
  // visit a 3- or 4-row group twice; lavapipe's visits, which cost little, stay at 2 rows.
  const std::vector<int32_t> even(8, 2);
  EXPECT_EQ(pick_tm(groups(even), 1, kGpuDecodeRows, 64), 2);
  EXPECT_EQ(pick_tm(groups(d), 1, kGpuDecodeRows, 64), 4);
  EXPECT_EQ(pick_tm(groups(d), 1, 32, 2), 2);
  // The hint: every group that many rows; a window of 3 local groups of 64 gets 3 values.
  EXPECT_EQ(device_expected_sizes(16, 8, 8, 5), std::vector<int32_t>(8, 5));
  EXPECT_EQ(device_expected_sizes(4096, 64, 3, 0).size(), 3u);
  // One group holds every row; no rows, or no groups, hold none.
  EXPECT_EQ(device_expected_sizes(300, 1, 1, 0), std::vector<int32_t>(1, 300));
  EXPECT_EQ(device_expected_sizes(0, 8, 8, 0), std::vector<int32_t>(8, 0));
  EXPECT_EQ(device_expected_sizes(10, 0, 0, 0), std::vector<int32_t>());
  // One row over a window of 8 of 64 groups: each quantile 0, the tiles still sized for a row.
  const std::vector<int32_t> one = device_expected_sizes(1, 64, 8, 0);
  EXPECT_EQ(std::accumulate(one.begin(), one.end(), 0), 1);
  EXPECT_EQ(one.back(), 1);
  // Many rows: the walk starts near the mean (a billion rows over 4 groups: 250 million, a few seconds
  // otherwise) and the values stay within a few standard deviations of it.
  const std::vector<int32_t> big = device_expected_sizes(int64_t(1) << 30, 4, 4, 0);
  for (int32_t v : big) EXPECT_NEAR(double(v), double(int64_t(1) << 28), 4.0 * 14189.0);
}

}  // namespace
}  // namespace vkgmm
