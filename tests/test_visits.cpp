// gmm's visit list (make_gmm_visits): every row of [0, m) in exactly one visit, each visit inside one
// group (or inside the rows outside the active groups, for fill visits), at most tm rows, in order.
#include <gtest/gtest.h>

#include <random>

#include "vkgmm/metadata.hpp"

namespace vkgmm {
namespace {

void check_visits(const std::vector<int32_t>& sizes, int64_t m, int64_t tm, int64_t first, int64_t count,
                  int64_t fill = 0) {
  if (fill == 0) fill = tm;
  std::vector<int32_t> offsets(sizes.size() + 1, 0);
  for (size_t g = 0; g < sizes.size(); ++g) offsets[g + 1] = offsets[g] + sizes[g];
  const GmmVisits v = make_gmm_visits(offsets, m, tm, first, count, fill);
  ASSERT_EQ(v.groups.size(), v.row_starts.size());
  const int64_t active_begin = offsets[first], active_end = offsets[first + count];
  std::vector<int> seen(m, 0);
  size_t expected_visits = 0;
  for (int64_t g = first; g < first + count; ++g) expected_visits += (sizes[g] + tm - 1) / tm;
  expected_visits += (active_begin + fill - 1) / fill + (m - active_end + fill - 1) / fill;
  EXPECT_EQ(v.groups.size(), expected_visits);
  for (size_t i = 0; i < v.groups.size(); ++i) {
    const int32_t g = v.groups[i];
    // The range the visit belongs to: its group's rows, or the stretch of inactive rows it starts in.
    int64_t lo, hi;
    if (g >= 0) {
      ASSERT_GE(g, first);
      ASSERT_LT(g, first + count);
      lo = offsets[g], hi = offsets[g + 1];
    } else if (v.row_starts[i] < active_begin) {
      lo = 0, hi = active_begin;
    } else {
      lo = active_end, hi = m;
    }
    const int64_t start = v.row_starts[i], stride = g >= 0 ? tm : fill;
    ASSERT_GE(start, lo);
    ASSERT_LT(start, hi) << "a visit with no rows";
    EXPECT_EQ((start - lo) % stride, 0) << "tiles start at their range's first row";
    for (int64_t r = start; r < std::min(start + stride, hi); ++r) ++seen[r];
  }
  for (int64_t r = 0; r < m; ++r) EXPECT_EQ(seen[r], 1) << "row " << r;
}

TEST(GmmVisits, HandWritten) {
  check_visits({3, 0, 5}, 8, 4, 0, 3);
  check_visits({3, 0, 5}, 12, 4, 1, 2);  // rows 0-2 and 8-11 are filled
  check_visits({0, 0}, 5, 2, 0, 2);      // nothing active: all fill
  check_visits({7}, 7, 128, 0, 1);
}

TEST(GmmVisits, RandomSweep) {
  std::mt19937 rng(77);
  for (int iter = 0; iter < 2000; ++iter) {
    const int64_t G = 1 + rng() % 20, m = rng() % 200;
    std::vector<int32_t> sizes(G, 0);
    int64_t left = m - int64_t(rng() % (m + 1)) / 4;  // sometimes rows past the groups
    for (auto& s : sizes) {
      const int64_t take = rng() % 3 == 0 ? 0 : int64_t(rng() % (left + 1));
      s = static_cast<int32_t>(take);
      left -= take;
    }
    const int64_t tm = int64_t(1) << (rng() % 8);
    const int64_t first = rng() % G, count = 1 + rng() % (G - first);
    check_visits(sizes, m, tm, first, count, tm * (1 + rng() % 4));
  }
}

}  // namespace
}  // namespace vkgmm
