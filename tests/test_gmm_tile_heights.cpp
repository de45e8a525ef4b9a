// gmm's tile heights per group (host/gmm_tile_heights.hpp): which heights skewed groups take, and that the
// passes' visits (make_gmm_visits, a pass each) take every row of [0, m) once, each visit's rows within
// one group and no more than its height.
#include <gtest/gtest.h>

#include <numeric>

#include "gmm_tile_heights.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm {
namespace {

// moe-fine's zipf sizes (bench/workloads.cpp): 64 groups, 4,096 rows, the longest 1,025.
const std::vector<int32_t> kMoeFine = {110, 12, 26, 12, 0,  160, 0,  1025, 308, 26,  18, 21,  54, 30, 12, 22,
                                       25,  77, 15, 62, 32, 97,  19, 0,    0,   31,  56, 45,  33, 477, 60, 123,
                                       18,  0,  9,  28, 21, 23,  18, 12,   15,  0,   13, 56,  34, 35, 14, 26,
                                       186, 0,  29, 78, 246, 12, 23, 63,   0,   13,  21, 15,  46, 10, 21, 23};
constexpr MTileRange kMatrix{16, 128, 64};  // NVIDIA's class: 16- to 128-row blocks
// One unit: the visits' cost alone sets the time.
constexpr VisitSlots kManyWaves{1, 1};

int64_t cost_of(int64_t rows, int64_t height, int64_t overhead) {
  return (rows + height - 1) / height * (height + overhead);
}

// The passes' visits as a plan lays them out: every row of [0, m) in exactly one visit, a group's visit
// within that group and its pass's height, the fill visits in the first pass only.
void expect_rows_once(const std::vector<int32_t>& sizes, int64_t m, int64_t offset, int64_t count,
                      const GmmTileHeights& h) {
  const std::vector<int32_t> offsets = make_group_offsets(sizes);
  const ActiveGroups active{&sizes, offset, count};
  std::vector<int> seen(size_t(m), 0);
  constexpr int64_t kFillRows = 256;
  for (size_t pass = 0; pass < h.heights.size(); ++pass) {
    const int64_t height = h.heights[pass];
    const GmmVisits v = make_gmm_visits(offsets, m, height, offset, count, kFillRows, h.rows(pass, active), pass == 0);
    for (size_t i = 0; i < v.groups.size(); ++i) {
      const int32_t g = v.groups[i], start = v.row_starts[i];
      int64_t end = 0;
      if (g < 0) {
        EXPECT_EQ(pass, 0u) << "a fill visit outside the first pass";
        // A fill visit runs to the end of its stretch of inactive rows.
        const int64_t stretch_end = start < offsets[size_t(offset)] ? offsets[size_t(offset)] : m;
        end = std::min<int64_t>(start + kFillRows, stretch_end);
      } else {
        ASSERT_GE(g, offset);
        ASSERT_LT(g, offset + count);
        EXPECT_GE(start, offsets[size_t(g)]);
        end = std::min<int64_t>(start + height, offsets[size_t(g) + 1]);
      }
      ASSERT_LT(start, end) << "an empty visit in pass " << pass;
      for (int64_t r = start; r < end; ++r) ++seen[size_t(r)];
    }
  }
  for (int64_t r = 0; r < m; ++r) ASSERT_EQ(seen[size_t(r)], 1) << "row " << r;
}

TEST(GmmTileHeights, SkewedGroupsTakeHeightsOfTheirOwn) {
  const ActiveGroups all{&kMoeFine, 0, int64_t(kMoeFine.size())};
  const GmmTileHeights h = gmm_tile_heights(all, kMatrix, kManyWaves);
  ASSERT_GE(h.heights.size(), 2u);
  EXPECT_EQ(h.heights[0], 128);  // the long groups' whole tiles
  for (size_t i = 1; i < h.heights.size(); ++i) EXPECT_LT(h.heights[i], h.heights[i - 1]);
  // Each group's remainder takes the height that costs least; the whole is below 7/8 of one height's.
  int64_t cost = 0, single = INT64_MAX;
  for (size_t g = 0; g < kMoeFine.size(); ++g) {
    const int64_t size = kMoeFine[g], rest = size % 128;
    cost += size / 128 * (128 + 64);
    if (!rest) {
      EXPECT_EQ(h.remainder[g], 0);
      continue;
    }
    int64_t best = INT64_MAX;
    for (int64_t t = 16; t <= 128; t *= 2) best = std::min(best, cost_of(rest, t, 64));
    EXPECT_EQ(cost_of(rest, h.remainder[g], 64), best) << "group " << g << " of " << size << " rows";
    cost += best;
  }
  for (int64_t t = 16; t <= 128; t *= 2) {
    int64_t c = 0;
    for (int32_t s : kMoeFine) c += cost_of(s, t, 64);
    single = std::min(single, c);
  }
  EXPECT_LE(cost * 8, single * 7);
  // By this model: 9,312 rows' worth of visits against 12,160 for 64-row tiles alone.
  EXPECT_EQ(cost, 9312);
  EXPECT_EQ(single, 12160);
  expect_rows_once(kMoeFine, 4096, 0, int64_t(kMoeFine.size()), h);
}

// One height's least time, ties to the larger: what gmm_tile_heights takes where the passes do not pay.
int64_t least_time_height(const std::vector<int32_t>& sizes, const MTileRange& range, const VisitSlots& slots) {
  int64_t best = 0, best_time = INT64_MAX;
  for (int64_t t = range.smallest; t <= range.largest; t *= 2) {
    int64_t visits = 0;
    for (int32_t s : sizes) visits += (s + t - 1) / t;
    const VisitRun run{visits, t + range.overhead};
    const int64_t time = visits_time({&run, 1}, slots);
    if (time <= best_time) best = t, best_time = time;
  }
  return best;
}

// Workgroups take the unit that frees first, in dispatch order: whole waves, and a later run's smaller
// tiles in the gaps an earlier run leaves.
TEST(GmmTileHeights, VisitsTimeCountsWaves) {
  const VisitRun wave{264, 10}, just_over{265, 10};
  EXPECT_EQ(visits_time({&wave, 1}, VisitSlots{1, 132}), 20);
  EXPECT_EQ(visits_time({&just_over, 1}, VisitSlots{1, 132}), 30);
  EXPECT_EQ(visits_time({&wave, 1}, VisitSlots{2, 132}), 40);  // each visit a workgroup per n tile
  const VisitRun tall_first[] = {{1, 10}, {2, 5}}, short_first[] = {{2, 5}, {1, 10}};
  EXPECT_EQ(visits_time(tall_first, VisitSlots{1, 2}), 10);
  EXPECT_EQ(visits_time(short_first, VisitSlots{1, 2}), 15);
  const VisitRun none{0, 10};
  EXPECT_EQ(visits_time({&none, 1}, VisitSlots{4, 132}), 0);
  // Past the listed workgroups: the work spread over the units, or the costliest workgroup.
  const VisitRun many{kListedWorkgroups + 1, 3};
  EXPECT_EQ(visits_time({&many, 1}, VisitSlots{1, 7}), (3 * (kListedWorkgroups + 1) + 6) / 7);
  EXPECT_EQ(visits_time({&many, 1}, VisitSlots{1, 1 << 30}), 3);
}

// One height by time where work alone would wait on a last wave: three 128-row groups and two of 64 rows
// on 4 units compute the fewest rows in 128-row tiles (5 visits, 960 rows' worth against 1,024), but take
// two waves of them (384) where 64-row tiles take two waves of 128 (256).
TEST(GmmTileHeights, OneHeightByTime) {
  const std::vector<int32_t> sizes = {128, 128, 128, 64, 64};
  const ActiveGroups all{&sizes, 0, int64_t(sizes.size())};
  EXPECT_EQ(pick_tm(all, 16, 128, 64), 128);
  const GmmTileHeights h = gmm_tile_heights(all, kMatrix, VisitSlots{1, 4});
  ASSERT_EQ(h.heights.size(), 1u);
  EXPECT_EQ(h.heights[0], 64);
  EXPECT_EQ(h.single, 64);
  expect_rows_once(sizes, 512, 0, int64_t(sizes.size()), h);
}

// moe-fine at n = 512 (4 tiles of 128 columns) on an H100's or H200's 132 SMs: 64-row tiles alone take
// 380 workgroups, three waves (384 rows' worth); the passes, the 128-row tiles first and the smaller ones
// in the gaps, 304. At n = 128 every 64-row visit runs at once (95 of them, 128) and the passes' 128-row
// tiles alone take longer: one height.
TEST(GmmTileHeights, WavesDecideThePasses) {
  const ActiveGroups all{&kMoeFine, 0, int64_t(kMoeFine.size())};
  const GmmTileHeights h200 = gmm_tile_heights(all, kMatrix, VisitSlots{4, 132});
  ASSERT_GE(h200.heights.size(), 2u);
  EXPECT_EQ(h200.heights[0], 128);
  // Beside the passes, the one height a plan that cannot run them takes: 64-row tiles, by time.
  EXPECT_EQ(h200.single, 64);
  EXPECT_EQ(h200.single, least_time_height(kMoeFine, kMatrix, VisitSlots{4, 132}));
  const GmmTileHeights one_wave = gmm_tile_heights(all, kMatrix, VisitSlots{1, 132});
  ASSERT_EQ(one_wave.heights.size(), 1u);
  EXPECT_EQ(one_wave.heights[0], 64);
  EXPECT_EQ(one_wave.heights[0], least_time_height(kMoeFine, kMatrix, VisitSlots{1, 132}));
  EXPECT_EQ(one_wave.single, one_wave.heights[0]);
}

TEST(GmmTileHeights, AlikeGroupsKeepOneHeight) {
  for (const std::vector<int32_t>& sizes :
       {std::vector<int32_t>(8, 512), std::vector<int32_t>(16, 40), std::vector<int32_t>{0, 0, 0},
        std::vector<int32_t>{300, 0, 290, 310}}) {
    const ActiveGroups all{&sizes, 0, int64_t(sizes.size())};
    for (const VisitSlots& slots : {kManyWaves, VisitSlots{8, 132}}) {
      const GmmTileHeights h = gmm_tile_heights(all, kMatrix, slots);
      ASSERT_EQ(h.heights.size(), 1u);
      EXPECT_EQ(h.heights[0], least_time_height(sizes, kMatrix, slots));
      const int64_t m = std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) + 7;  // rows past the groups too
      expect_rows_once(sizes, m, 0, int64_t(sizes.size()), h);
    }
  }
}

// A window of the groups: the heights are the window's, the rows outside it fill visits of the first pass.
TEST(GmmTileHeights, AWindowOfTheGroups) {
  const std::vector<int32_t> sizes = {700, 1000, 20, 5, 260, 17, 0, 9, 400};
  const ActiveGroups window{&sizes, 1, 6};
  const GmmTileHeights h = gmm_tile_heights(window, kMatrix, kManyWaves);
  ASSERT_GE(h.heights.size(), 2u);
  EXPECT_EQ(h.remainder.size(), 6u);
  expect_rows_once(sizes, 2500, 1, 6, h);
}

}  // namespace
}  // namespace vkgmm
