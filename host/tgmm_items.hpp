// tgmm's work items (internal): one per active group, or where a group's rows far outnumber the others'
// (skewed routing), that group's reduction split into chunks that several workgroups walk at once, their
// partial sums added by an ordered combine (SplitReduction).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "split_reduction.hpp"
#include "interface.h"

namespace vkgmm {

// The work items of tgmm's split reduction, and the plan core's part of it; no split: `split` unset and
// no items (one work item per group, read from the group offsets).
struct TgmmItems {
  std::vector<int32_t> items;  // VKGMM_TGMM_ITEM_WORDS words each (shaders/interface.h)
  std::optional<SplitReduction> split;
  uint64_t count() const { return items.size() / VKGMM_TGMM_ITEM_WORDS; }
};

// The most chunks one group's rows are split into, and the most chunk slots of all the split groups.
inline constexpr uint32_t kMostTgmmChunks = 16;
// The most bytes the chunks' partial sums take (with group sizes on the device a plan's workspace holds
// them whatever the sizes).
inline constexpr uint64_t kTgmmSplitBytes = uint64_t(256) << 20;

// What the split is sized by: the kernel's rows per step, an output group's elements and blocks (the
// workgroups each work item takes), the workgroups the device runs at once, and the most bytes the
// chunks' partial sums may take.
struct TgmmSplitLimits {
  uint32_t step = 1;
  uint64_t group_elements = 0, group_blocks = 1, concurrent_workgroups = 1, budget_bytes = 0;
};

// The chunk slots the split may use: kMostTgmmChunks, or fewer where their partial sums (f32, an output
// group's elements each) would pass the budget. A split with group sizes on the device (its workspace
// sized before they are known) holds this many.
uint64_t tgmm_split_slots(const TgmmSplitLimits& limits);

// The split for the active groups [group_offset, group_offset + groups) of `offsets` (the group offsets,
// G + 1). `chunk` is the largest of: the non-empty active groups' mean rows; 4 steps; and the rows each of
// the device's concurrent workgroups walks when all the blocks' rows are shared evenly (shorter chunks
// would not finish any sooner); rounded up to a step. Where the longest group has more than twice `chunk`
// rows, every group with more than `chunk` is split, each into the same number of chunks: enough to bring
// the longest down to about `chunk` rows, as many as tgmm_split_slots shares among them. Else none is.
// shaders/tgmm_split.glsl takes the same rule on the device.
TgmmItems split_skewed_groups(const std::vector<int32_t>& offsets, int64_t group_offset, int64_t groups,
                              const TgmmSplitLimits& limits);

}  // namespace vkgmm
