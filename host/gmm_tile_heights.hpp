// gmm's tile heights per group (internal): where the active groups' rows differ widely (skewed routing),
// one tile height for all of them makes the small groups' ragged tiles much of the work. Each group's rows
// then take whole tiles of the largest height, and its last rows the height that covers them at the least
// cost; the kernel runs once per height used, each pass over its own visits, the passes side by side.
#pragma once

#include <cstdint>
#include <vector>

#include "tiling.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm {

struct GmmTileHeights {
  // The passes' heights, largest first; one: a single pass, every group in tiles of heights[0].
  std::vector<int64_t> heights;
  int64_t largest = 0;  // the height of each group's whole tiles (the range's largest)
  // Per active group: the height of the tiles after its whole tiles of `largest` (0: no rows left).
  std::vector<int64_t> remainder;
  // The rows of each active group that the pass of heights[pass] takes, relative to the group's first row.
  std::vector<GroupRows> rows(size_t pass, const ActiveGroups& groups) const;
};

// What the visits run on: each visit's workgroups (the grid's n tiles) and the workgroups the device runs at
// once.
struct VisitSlots {
  int64_t tiles_n = 1, concurrent = 1;
};

// Passes are taken where their time, by the model below, is at most this share of one height's (fewer
// passes are cheaper to dispatch and compile): 7/8.
inline constexpr int64_t kTileHeightsGainNumerator = 7, kTileHeightsGainDenominator = 8;

// The heights for the active groups over `range` (powers of two, gmm_m_tile_range). A group's rows past
// its whole tiles of range.largest take the height whose visits cost least (ties to the larger one);
// each visit costs its height plus range.overhead rows (pick_tm's measure). The time of a set of visits is
// the larger of their cost spread evenly over the concurrent workgroups and the costliest visit: a grid of
// about one wave is as slow as its largest tiles, so the passes pay only where there are several waves.
// Where the passes' time is more than 7/8 of the best single height's (pick_tm's), or they would use one
// height, the result is that single height with no remainders.
GmmTileHeights gmm_tile_heights(const ActiveGroups& groups, const MTileRange& range, const VisitSlots& slots);

}  // namespace vkgmm
