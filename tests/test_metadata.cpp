// make_group_metadata against a brute-force enumeration of the visits the contract describes.
//
// The library builds the metadata megablox-style (cumsum, rounding, histogram, repeat, roll); this test
// instead walks the groups one by one, so the two share no arithmetic and a slip in either shows up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "vkgmm/metadata.hpp"

namespace {

using Visit = std::pair<int32_t, int32_t>;  // (group, m tile)

struct Case {
  std::vector<int32_t> sizes;
  int64_t m = 0, tm = 1, start_group = 0, num_groups = 0;
  bool visit_empty = false;
};

std::string describe(const Case& c) {
  std::ostringstream s;
  s << "sizes=[";
  for (size_t i = 0; i < c.sizes.size(); ++i) s << (i ? "," : "") << c.sizes[i];
  s << "] m=" << c.m << " tm=" << c.tm << " start_group=" << c.start_group
    << " num_groups=" << c.num_groups << " visit_empty=" << c.visit_empty;
  return s.str();
}

int64_t tiles_of(int64_t m, int64_t tm) { return (m + tm - 1) / tm; }

// The visits of groups [first, first + count), straight from the rule: a non-empty group visits every
// tile its rows touch, in order; an empty one (with visit_empty) visits the tile its offset falls in,
// clamped to the last tile, or tile 0 when there are no tiles at all.
std::vector<Visit> enumerate(const std::vector<int32_t>& sizes, int64_t m, int64_t tm, int64_t first,
                             int64_t count, bool visit_empty) {
  const int64_t tiles_m = tiles_of(m, tm);
  int64_t offset = 0;
  for (int64_t g = 0; g < first; ++g) offset += sizes[g];
  std::vector<Visit> visits;
  for (int64_t g = first; g < first + count; ++g) {
    const int64_t size = sizes[g];
    if (size > 0) {
      for (int64_t t = offset / tm; t <= (offset + size - 1) / tm; ++t)
        visits.emplace_back(static_cast<int32_t>(g), static_cast<int32_t>(t));
    } else if (visit_empty) {
      const int64_t t = m == 0 ? 0 : std::min(offset / tm, tiles_m - 1);
      visits.emplace_back(static_cast<int32_t>(g), static_cast<int32_t>(t));
    }
    offset += size;
  }
  return visits;
}

testing::AssertionResult matches(const Case& c) {
  const int64_t G = static_cast<int64_t>(c.sizes.size());
  const int64_t tiles_m = tiles_of(c.m, c.tm);
  const vkgmm::GroupMetadata md =
      vkgmm::make_group_metadata(c.sizes, c.m, c.tm, c.start_group, c.num_groups, c.visit_empty);
  auto fail = [&]() { return testing::AssertionFailure() << describe(c) << ": "; };

  // group_offsets: the exclusive prefix sum, G + 1 entries.
  if (md.group_offsets.size() != static_cast<size_t>(G + 1))
    return fail() << "group_offsets has " << md.group_offsets.size() << " entries, want " << G + 1;
  int64_t offset = 0;
  for (int64_t g = 0; g <= G; ++g) {
    if (md.group_offsets[g] != offset)
      return fail() << "group_offsets[" << g << "] = " << md.group_offsets[g] << ", want " << offset;
    if (g < G) offset += c.sizes[g];
  }

  const std::vector<Visit> want = enumerate(c.sizes, c.m, c.tm, c.start_group, c.num_groups, c.visit_empty);
  if (md.num_tiles != static_cast<int64_t>(want.size()))
    return fail() << "num_tiles = " << md.num_tiles << ", want " << want.size();

  // Length: megablox always allocates tiles_m + G - 1 entries. That bounds the visits of all groups
  // except when m == 0 with visit_empty (G visits, no tiles), a shape megablox cannot run; there any
  // length that holds the visits is accepted.
  if (md.group_ids.size() != md.m_tile_ids.size())
    return fail() << "group_ids has " << md.group_ids.size() << " entries but m_tile_ids "
                  << md.m_tile_ids.size();
  const int64_t all_visits = static_cast<int64_t>(enumerate(c.sizes, c.m, c.tm, 0, G, c.visit_empty).size());
  const int64_t megablox_len = tiles_m + G - 1;
  const int64_t len = static_cast<int64_t>(md.group_ids.size());
  if (all_visits <= megablox_len) {
    if (len != megablox_len) return fail() << "arrays have " << len << " entries, want " << megablox_len;
  } else {
    // Self-check of the reasoning above, so the relaxed rule cannot hide a real overflow.
    if (!(c.m == 0 && c.visit_empty)) return fail() << "test oracle: unexpected visit overflow";
    if (len < md.num_tiles) return fail() << "arrays have " << len << " entries, fewer than num_tiles";
  }

  for (size_t i = 0; i < want.size(); ++i) {
    const Visit got{md.group_ids[i], md.m_tile_ids[i]};
    if (got != want[i])
      return fail() << "visit " << i << " is (group " << got.first << ", tile " << got.second
                    << "), want (group " << want[i].first << ", tile " << want[i].second << ")";
  }
  return testing::AssertionSuccess();
}

// Entries past num_tiles are padding; a kernel that over-dispatches may still read them, so they should
// at least be valid indices (megablox's repeat/roll padding always is).
testing::AssertionResult padding_in_range(const Case& c) {
  const int64_t G = static_cast<int64_t>(c.sizes.size());
  const int64_t tiles = std::max<int64_t>(tiles_of(c.m, c.tm), 1);
  const auto md = vkgmm::make_group_metadata(c.sizes, c.m, c.tm, c.start_group, c.num_groups, c.visit_empty);
  for (size_t i = static_cast<size_t>(md.num_tiles); i < md.group_ids.size(); ++i) {
    if (md.group_ids[i] < 0 || md.group_ids[i] >= G || md.m_tile_ids[i] < 0 || md.m_tile_ids[i] >= tiles)
      return testing::AssertionFailure() << describe(c) << ": padding entry " << i << " is (group "
                                         << md.group_ids[i] << ", tile " << md.m_tile_ids[i] << ")";
  }
  return testing::AssertionSuccess();
}

Case full(std::vector<int32_t> sizes, int64_t m, int64_t tm, bool visit_empty) {
  const int64_t G = static_cast<int64_t>(sizes.size());
  return {std::move(sizes), m, tm, 0, G, visit_empty};
}

// --- hand-written cases: the expected visits are spelled out, not enumerated ------------------------------

struct Exact {
  Case c;
  std::vector<int32_t> offsets;
  std::vector<Visit> visits;
  size_t length;
};

void expect_exact(const Exact& e) {
  SCOPED_TRACE(describe(e.c));
  const auto md = vkgmm::make_group_metadata(e.c.sizes, e.c.m, e.c.tm, e.c.start_group, e.c.num_groups,
                                             e.c.visit_empty);
  EXPECT_EQ(md.group_offsets, e.offsets);
  ASSERT_EQ(md.num_tiles, static_cast<int64_t>(e.visits.size()));
  ASSERT_GE(md.group_ids.size(), e.visits.size());
  ASSERT_GE(md.m_tile_ids.size(), e.visits.size());
  if (e.length) {
    EXPECT_EQ(md.group_ids.size(), e.length);
    EXPECT_EQ(md.m_tile_ids.size(), e.length);
  }
  for (size_t i = 0; i < e.visits.size(); ++i) {
    EXPECT_EQ(md.group_ids[i], e.visits[i].first) << "visit " << i;
    EXPECT_EQ(md.m_tile_ids[i], e.visits[i].second) << "visit " << i;
  }
  // And the brute force agrees with the hand-written expectation, which keeps the oracle honest.
  EXPECT_EQ(enumerate(e.c.sizes, e.c.m, e.c.tm, e.c.start_group, e.c.num_groups, e.c.visit_empty), e.visits);
}

TEST(GroupMetadata, ExactSkipsEmptyGroups) {
  // Rows: g0 0-2 (tile 0), g1 3-7 (tiles 0,1), g2 empty at 8, g3 8-11 (tile 2).
  expect_exact({full({3, 5, 0, 4}, 12, 4, false), {0, 3, 8, 8, 12}, {{0, 0}, {1, 0}, {1, 1}, {3, 2}}, 6});
}

TEST(GroupMetadata, ExactVisitsEmptyGroups) {
  expect_exact({full({3, 5, 0, 4}, 12, 4, true), {0, 3, 8, 8, 12},
                {{0, 0}, {1, 0}, {1, 1}, {2, 2}, {3, 2}}, 6});
}

TEST(GroupMetadata, ExactWindowComesFirst) {
  // Groups 1 and 2 only: their visits lead the arrays even though group 0 precedes them in row order.
  expect_exact({{{3, 5, 0, 4}, 12, 4, 1, 2, true}, {0, 3, 8, 8, 12}, {{1, 0}, {1, 1}, {2, 2}}, 6});
  expect_exact({{{3, 5, 0, 4}, 12, 4, 3, 1, false}, {0, 3, 8, 8, 12}, {{3, 2}}, 6});
  expect_exact({{{3, 5, 0, 4}, 12, 4, 2, 0, true}, {0, 3, 8, 8, 12}, {}, 6});
}

TEST(GroupMetadata, ExactPartialLastTileAndRowsPastSum) {
  // m = 10 is not a multiple of 4; rows 7-9 belong to no group, so tile 2 is never visited.
  expect_exact({full({5, 2}, 10, 4, false), {0, 5, 7}, {{0, 0}, {0, 1}, {1, 1}}, 4});
}

TEST(GroupMetadata, ExactEmptyGroupAtTheEndIsClamped) {
  // Group 1 starts at row 4 == m: tile 1 does not exist, so it visits the last tile, 0.
  expect_exact({full({4, 0}, 4, 4, true), {0, 4, 4}, {{0, 0}, {1, 0}}, 2});
  // Offset 8 of 10 rows with tm = 4 is tile 2, which exists (partial): no clamp.
  expect_exact({full({8, 0}, 10, 4, true), {0, 8, 8}, {{0, 0}, {0, 1}, {1, 2}}, 4});
}

TEST(GroupMetadata, ExactTileSizeOne) {
  expect_exact({full({2, 0, 1}, 3, 1, false), {0, 2, 2, 3}, {{0, 0}, {0, 1}, {2, 2}}, 5});
  expect_exact({full({2, 0, 1}, 3, 1, true), {0, 2, 2, 3}, {{0, 0}, {0, 1}, {1, 2}, {2, 2}}, 5});
}

TEST(GroupMetadata, ExactNoRows) {
  // m == 0: no tiles. Without visit_empty nothing runs; with it every group still gets its one visit
  // (tgmm must write each group's output), at tile 0, and the arrays must be long enough to hold them.
  expect_exact({full({0, 0, 0}, 0, 8, false), {0, 0, 0, 0}, {}, 2});
  expect_exact({full({0, 0, 0}, 0, 8, true), {0, 0, 0, 0}, {{0, 0}, {1, 0}, {2, 0}}, 0});
  expect_exact({{{0, 0, 0}, 0, 8, 1, 2, true}, {0, 0, 0, 0}, {{1, 0}, {2, 0}}, 0});
}

TEST(GroupMetadata, ExactOneGroupSpansAllTiles) {
  expect_exact({full({0, 9, 0}, 9, 2, false), {0, 0, 9, 9}, {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}}, 7});
  expect_exact({full({0, 9, 0}, 9, 2, true), {0, 0, 9, 9},
                {{0, 0}, {1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 4}}, 7});
}

// --- randomized sweeps ----------------------------------------------------------------------------------

enum class Shape { random, empty_first, empty_middle, empty_last, one_group, split_tiles, many_groups,
                   sum_below_m, count };

// Splits `total` rows into G sizes by random cut points (so empty groups arise naturally).
std::vector<int32_t> split(std::mt19937& rng, int64_t G, int64_t total) {
  std::uniform_int_distribution<int64_t> cut(0, total);
  std::vector<int64_t> cuts(static_cast<size_t>(G - 1));
  for (auto& x : cuts) x = cut(rng);
  cuts.push_back(0);
  cuts.push_back(total);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int32_t> sizes;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) sizes.push_back(static_cast<int32_t>(cuts[i + 1] - cuts[i]));
  return sizes;
}

Case generate(std::mt19937& rng, Shape shape) {
  static const int64_t tms[] = {1, 2, 3, 7, 8, 16, 128};
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Case c;
  c.tm = tms[uniform(0, 6)];
  int64_t G = uniform(1, 40);
  c.m = uniform(0, 300);
  // Usually every row belongs to a group, as in a MoE layer; sum_below_m leaves a tail.
  int64_t total = shape == Shape::sum_below_m ? uniform(0, std::max<int64_t>(c.m - 1, 0)) : c.m;

  switch (shape) {
    case Shape::many_groups:
      // More groups than tiles: many groups share a tile, and several start inside the same one.
      c.m = uniform(0, 40);
      total = c.m;
      G = std::min<int64_t>(40, tiles_of(c.m, c.tm) + uniform(1, 30));
      c.sizes = split(rng, G, total);
      break;
    case Shape::split_tiles: {
      // Small sizes that are rarely multiples of tm, so most groups start and end mid-tile.
      int64_t left = total;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t s = g + 1 == G ? left : std::min(left, uniform(1, std::max<int64_t>(2 * c.tm - 1, 1)));
        c.sizes.push_back(static_cast<int32_t>(s));
        left -= s;
      }
      break;
    }
    case Shape::one_group:
      c.sizes.assign(static_cast<size_t>(G), 0);
      c.sizes[static_cast<size_t>(uniform(0, G - 1))] = static_cast<int32_t>(total);
      break;
    default:
      c.sizes = split(rng, G, total);
      break;
  }

  // Force the named empty group and move its rows to a neighbour, keeping the sum.
  auto empty_at = [&](int64_t g) {
    if (G < 2) return;
    const int64_t other = g == 0 ? 1 : g - 1;
    c.sizes[other] += c.sizes[g];
    c.sizes[g] = 0;
  };
  if (shape == Shape::empty_first) empty_at(0);
  if (shape == Shape::empty_middle) empty_at(G / 2);
  if (shape == Shape::empty_last) empty_at(G - 1);
  return c;
}

void sweep(uint32_t seed, bool visit_empty, bool windows) {
  std::mt19937 rng(seed);
  for (int iter = 0; iter < 3000; ++iter) {
    Case c = generate(rng, static_cast<Shape>(iter % static_cast<int>(Shape::count)));
    const int64_t G = static_cast<int64_t>(c.sizes.size());
    c.visit_empty = visit_empty;
    c.start_group = 0;
    c.num_groups = G;
    if (windows) {
      c.start_group = std::uniform_int_distribution<int64_t>(0, G)(rng);
      c.num_groups = std::uniform_int_distribution<int64_t>(0, G - c.start_group)(rng);
    }
    ASSERT_TRUE(matches(c)) << "seed " << seed << " iteration " << iter;
  }
}

TEST(GroupMetadata, SweepAllGroupsSkipEmpty) { sweep(1, false, false); }
TEST(GroupMetadata, SweepAllGroupsVisitEmpty) { sweep(2, true, false); }
TEST(GroupMetadata, SweepWindowsSkipEmpty) { sweep(3, false, true); }
TEST(GroupMetadata, SweepWindowsVisitEmpty) { sweep(4, true, true); }

TEST(GroupMetadata, SweepEveryTileSizeOnEveryShape) {
  // Deterministic grid over the small shapes, where the edge cases (m < tm, m == tm, m % tm == 1) live.
  for (int64_t tm : {1, 2, 3, 7, 8, 16, 128})
    for (int64_t m = 0; m <= 20; ++m)
      for (const std::vector<int32_t>& base :
           std::vector<std::vector<int32_t>>{{1}, {0, 1}, {1, 0}, {1, 0, 1}, {0, 0, 1, 0, 0}, {2, 3, 0, 1}}) {
        // Scale the pattern to m rows: each unit gets m / units rows, the last non-empty one the rest.
        int64_t units = 0;
        for (int32_t b : base) units += b;
        std::vector<int32_t> sizes;
        int64_t given = 0, seen = 0;
        for (int32_t b : base) {
          seen += b;
          const int64_t s = b == 0 ? 0 : (seen == units ? m - given : m * b / units);
          sizes.push_back(static_cast<int32_t>(s));
          given += s;
        }
        const int64_t G = static_cast<int64_t>(sizes.size());
        for (bool ve : {false, true})
          for (int64_t first = 0; first <= G; ++first)
            for (int64_t count = 0; first + count <= G; ++count)
              ASSERT_TRUE(matches({sizes, m, tm, first, count, ve}));
      }
}

TEST(GroupMetadata, PaddingEntriesAreValidIndices) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 2000; ++iter) {
    Case c = generate(rng, static_cast<Shape>(iter % static_cast<int>(Shape::count)));
    const int64_t G = static_cast<int64_t>(c.sizes.size());
    c.visit_empty = iter % 2 == 0;
    c.start_group = std::uniform_int_distribution<int64_t>(0, G)(rng);
    c.num_groups = std::uniform_int_distribution<int64_t>(0, G - c.start_group)(rng);
    ASSERT_TRUE(padding_in_range(c)) << "iteration " << iter;
  }
}

}  // namespace
