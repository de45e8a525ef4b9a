// Which groups tgmm splits into chunks, and the chunks (host/tgmm_items.hpp): every group's rows covered
// once, in order; slots numbered in the combine's order; runs of consecutive split groups.
#include <gtest/gtest.h>

#include <numeric>

#include "tgmm_items.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm {
namespace {

struct Item {
  int32_t group, begin, end, slot;
};

std::vector<int32_t> offsets_of(const std::vector<int32_t>& sizes) { return make_group_offsets(sizes); }

// Limits where the device's concurrency sets no floor on the chunks (one block per group, many workgroups).
TgmmSplitLimits limits(uint32_t step, uint64_t group_elements, uint64_t budget_bytes) {
  TgmmSplitLimits l;
  l.step = step, l.group_elements = group_elements, l.budget_bytes = budget_bytes;
  l.group_blocks = 1, l.concurrent_workgroups = 1 << 20;
  return l;
}

std::vector<Item> items_of(const TgmmItems& t) {
  std::vector<Item> out;
  for (size_t i = 0; i + 4 <= t.items.size(); i += 4) out.push_back({t.items[i], t.items[i + 1], t.items[i + 2], t.items[i + 3]});
  return out;
}

// The items cover each active group's rows [offsets[o + j], offsets[o + j + 1]) in order, a split group's
// in exactly `chunks` items with consecutive slots; the runs list the split groups, slots in order.
void expect_well_formed(const TgmmItems& t, const std::vector<int32_t>& offsets, int64_t o, int64_t groups) {
  ASSERT_TRUE(t.split);
  const SplitReduction& s = *t.split;
  const std::vector<Item> items = items_of(t);
  size_t i = 0;
  int32_t slot = 0;
  std::vector<int32_t> split_groups;
  for (int64_t j = 0; j < groups; ++j) {
    int32_t row = offsets[o + j];
    const bool split = i < items.size() && items[i].slot >= 0;
    const size_t count = split ? s.chunks : 1;
    if (split) split_groups.push_back(int32_t(j));
    for (size_t c = 0; c < count; ++c, ++i) {
      ASSERT_LT(i, items.size());
      EXPECT_EQ(items[i].group, j);
      EXPECT_EQ(items[i].begin, row) << "group " << j << " item " << c;
      EXPECT_LE(items[i].begin, items[i].end);
      EXPECT_EQ(items[i].slot, split ? slot++ : -1);
      row = items[i].end;
    }
    EXPECT_EQ(row, offsets[o + j + 1]) << "group " << j << "'s rows are not all covered";
  }
  EXPECT_EQ(i, items.size());
  std::vector<int32_t> from_runs;
  uint32_t next_slot = 0;
  for (const SplitReduction::Run& r : s.runs) {
    EXPECT_EQ(r.first_slot, next_slot);
    next_slot += r.groups * s.chunks;
    for (uint32_t g = 0; g < r.groups; ++g) from_runs.push_back(int32_t(r.first_group + g));
  }
  EXPECT_EQ(from_runs, split_groups);
  EXPECT_EQ(s.slots(), uint64_t(slot));
}

TEST(TgmmItems, SplitsTheGroupsLongerThanAChunk) {
  const std::vector<int32_t> sizes = {10, 600, 20, 30, 0, 300, 40, 25};
  const std::vector<int32_t> offsets = make_group_offsets(sizes);
  // 1025 rows over 7 busy groups: chunks of 160 rows (the mean, 147, in steps of 16). The longest has
  // more than two: it and the 300-row group are split, each in 4 chunks (600 / 160 rounded up): of 160,
  // 160, 160 and 120 rows, and of 80, 80, 80 and 60.
  const TgmmItems t = split_skewed_groups(offsets, 0, 8, limits(16, 100, 1 << 20));
  expect_well_formed(t, offsets, 0, 8);
  ASSERT_TRUE(t.split);
  EXPECT_EQ(t.split->chunks, 4u);
  EXPECT_EQ(t.split->group_elements, 100u);
  EXPECT_EQ(t.count(), 14u);
  ASSERT_EQ(t.split->runs.size(), 2u);
  const std::vector<Item> items = items_of(t);
  EXPECT_EQ(items[1].end - items[1].begin, 160);
  EXPECT_EQ(items[4].end - items[4].begin, 120);
  EXPECT_EQ(items[8].end - items[8].begin, 80);
  EXPECT_EQ(items[11].end - items[11].begin, 60);
  EXPECT_EQ(t.split->words(), 8 * 100u);
}

TEST(TgmmItems, RunsWindowsAndEmptyChunks) {
  // Two adjacent long groups, one apart, in a window from group 1.
  const std::vector<int32_t> sizes = {500, 1200, 1100, 5, 9, 0, 14, 3, 1000, 6, 11, 2, 7, 800};
  const std::vector<int32_t> offsets = make_group_offsets(sizes);
  const TgmmItems t = split_skewed_groups(offsets, 1, 12, limits(32, 8, 1 << 20));
  expect_well_formed(t, offsets, 1, 12);
  ASSERT_TRUE(t.split);
  ASSERT_EQ(t.split->runs.size(), 2u);
  EXPECT_EQ(t.split->runs[0].first_group, 0u);
  EXPECT_EQ(t.split->runs[0].groups, 2u);
  EXPECT_EQ(t.split->runs[1].first_group, 7u);
  // A split group much shorter than the longest: its last chunks are empty, at its end.
  const std::vector<int32_t> uneven = {2000, 700, 1, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<int32_t> uo = make_group_offsets(uneven);
  const TgmmItems u = split_skewed_groups(uo, 0, 10, limits(64, 4, 1 << 20));
  expect_well_formed(u, uo, 0, 10);
  ASSERT_TRUE(u.split);
  const std::vector<Item> items = items_of(u);
  EXPECT_EQ(items[2 * u.split->chunks - 1].begin, items[2 * u.split->chunks - 1].end);
}

// Chunks no shorter than each of the device's concurrent workgroups' even share of all the blocks' rows:
// 1025 rows x 16 blocks over 16 workgroups at once is 1025 rows, so no group is split; with 128 at once
// (129 rows, under the mean of 147) the split is the one above.
TEST(TgmmItems, ChunksNoShorterThanTheDevicesEvenShare) {
  const std::vector<int32_t> skewed = offsets_of({10, 600, 20, 30, 0, 300, 40, 25});
  TgmmSplitLimits l = limits(16, 100, 1 << 20);
  l.group_blocks = 16, l.concurrent_workgroups = 16;
  EXPECT_FALSE(split_skewed_groups(skewed, 0, 8, l).split);
  l.concurrent_workgroups = 128;
  const TgmmItems t = split_skewed_groups(skewed, 0, 8, l);
  ASSERT_TRUE(t.split);
  EXPECT_EQ(t.split->chunks, 4u);
  // A longer group over fewer workgroups: 2500 + 7 x 30 rows x 4 blocks over 16 at once is 678 rows, so
  // chunks of 688 (in steps of 16): 4 of them.
  const std::vector<int32_t> longer = offsets_of({30, 30, 2500, 30, 30, 30, 30, 30});
  l.group_blocks = 4, l.concurrent_workgroups = 16;
  const TgmmItems u = split_skewed_groups(longer, 0, 8, l);
  ASSERT_TRUE(u.split);
  EXPECT_EQ(u.split->chunks, 4u);
  expect_well_formed(u, longer, 0, 8);
}

TEST(TgmmItems, NoSplitWhereNothingIsLongOrNothingFits) {
  const std::vector<int32_t> empty = offsets_of({0, 0, 0});
  EXPECT_FALSE(split_skewed_groups(empty, 0, 3, limits(16, 64, 1 << 30)).split);
  // Long groups of few rows: under four steps of rows are never split.
  const std::vector<int32_t> small = offsets_of({1, 1, 1, 1, 60});
  EXPECT_FALSE(split_skewed_groups(small, 0, 5, limits(16, 64, 1 << 30)).split);
  // Near-even groups: the longest (310 rows) is not two chunks (304 rows) long, so none is split, though
  // it is longer than one.
  const std::vector<int32_t> near = offsets_of({300, 280, 0, 310, 295});
  EXPECT_FALSE(split_skewed_groups(near, 0, 5, limits(16, 64, 1 << 30)).split);
  // The budget: two split groups' chunks of 100 f32 elements; room for 2 of their 4 chunks, then for 1.
  const std::vector<int32_t> skewed = offsets_of({10, 600, 20, 30, 0, 300, 40, 25});
  const TgmmItems two = split_skewed_groups(skewed, 0, 8, limits(16, 100, 2 * 2 * 100 * 4 + 799));
  ASSERT_TRUE(two.split);
  EXPECT_EQ(two.split->chunks, 2u);
  expect_well_formed(two, skewed, 0, 8);
  EXPECT_FALSE(split_skewed_groups(skewed, 0, 8, limits(16, 100, 2 * 2 * 100 * 4 - 1)).split);
}

// The split groups share kMostTgmmChunks slots, whatever the budget: three long groups take 5 chunks each
// (of the 12 that would bring each to about a chunk), nine take fewer than 2 and none is split.
TEST(TgmmItems, SplitGroupsShareTheSlots) {
  EXPECT_EQ(tgmm_split_slots(limits(16, 100, 1 << 30)), kMostTgmmChunks);
  EXPECT_EQ(tgmm_split_slots(limits(16, 100, 3 * 100 * 4 + 399)), 3u);
  std::vector<int32_t> sizes(40, 20);
  for (int g : {3, 17, 30}) sizes[g] = 2000;
  const std::vector<int32_t> three = offsets_of(sizes);
  const TgmmItems t = split_skewed_groups(three, 0, 40, limits(16, 100, 1 << 30));
  ASSERT_TRUE(t.split);
  EXPECT_EQ(t.split->chunks, 5u);
  EXPECT_EQ(t.split->slots(), 15u);
  expect_well_formed(t, three, 0, 40);
  for (int g : {5, 9, 12, 21, 25, 33}) sizes[g] = 2000;
  EXPECT_FALSE(split_skewed_groups(offsets_of(sizes), 0, 40, limits(16, 100, 1 << 30)).split);
}

}  // namespace
}  // namespace vkgmm
