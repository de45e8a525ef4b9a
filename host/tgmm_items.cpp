// tgmm's work items: which groups' reductions are split, and their chunks (see tgmm_items.hpp).
#include "tgmm_items.hpp"

#include <algorithm>

namespace vkgmm {

namespace {
uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }
}  // namespace

uint64_t tgmm_split_slots(const TgmmSplitLimits& limits) {
  if (!limits.group_elements) return 0;
  return std::min<uint64_t>(kMostTgmmChunks, limits.budget_bytes / (limits.group_elements * 4));
}

TgmmItems split_skewed_groups(const std::vector<int32_t>& offsets, int64_t group_offset, int64_t groups,
                              const TgmmSplitLimits& limits) {
  const uint64_t step = limits.step, group_elements = limits.group_elements;
  TgmmItems out;
  auto rows = [&](int64_t j) { return uint64_t(offsets[group_offset + j + 1] - offsets[group_offset + j]); };
  uint64_t total = 0, busy = 0, longest = 0;
  for (int64_t j = 0; j < groups; ++j) {
    total += rows(j);
    busy += rows(j) > 0;
    longest = std::max(longest, rows(j));
  }
  if (!busy || !step || !group_elements) return out;
  const uint64_t mean = (total + busy - 1) / busy;
  const uint64_t even_share = (total * std::max<uint64_t>(limits.group_blocks, 1) + limits.concurrent_workgroups - 1) /
                              std::max<uint64_t>(limits.concurrent_workgroups, 1);
  const uint64_t chunk = round_up(std::max<uint64_t>({mean, 4 * step, even_share}), step);
  // Skewed: the longest group walks more than two chunks. Then every group longer than a chunk is split,
  // so that none walks more than about one.
  if (longest <= 2 * chunk) return out;
  uint64_t split_groups = 0;
  for (int64_t j = 0; j < groups; ++j) split_groups += rows(j) > chunk;
  const uint64_t chunks = std::min<uint64_t>((longest + chunk - 1) / chunk, tgmm_split_slots(limits) / split_groups);
  if (chunks < 2) return out;

  SplitReduction split;
  split.chunks = static_cast<uint32_t>(chunks);
  split.group_elements = static_cast<uint32_t>(group_elements);
  uint32_t slot = 0;
  auto item = [&](int64_t j, uint64_t begin, uint64_t end, int32_t s) {
    out.items.insert(out.items.end(), {int32_t(j), int32_t(begin), int32_t(end), s});
  };
  for (int64_t j = 0; j < groups; ++j) {
    const uint64_t begin = uint64_t(offsets[group_offset + j]), end = begin + rows(j);
    if (rows(j) <= chunk) {
      item(j, begin, end, -1);
      continue;
    }
    // Consecutive split groups make one run of the combine.
    if (split.runs.empty() || split.runs.back().first_group + split.runs.back().groups != uint32_t(j))
      split.runs.push_back({uint32_t(j), 0, slot});
    ++split.runs.back().groups;
    // Chunks of whole steps; the last ones may be empty (their partial sums are zeros).
    const uint64_t length = round_up((rows(j) + chunks - 1) / chunks, step);
    for (uint64_t s = 0; s < chunks; ++s) {
      const uint64_t from = std::min(end, begin + s * length), to = std::min(end, from + length);
      item(j, from, to, int32_t(slot++));
    }
  }
  out.split = std::move(split);
  return out;
}

}  // namespace vkgmm
