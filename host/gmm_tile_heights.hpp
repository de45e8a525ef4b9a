// gmm's tile heights per group (internal): where the active groups' rows differ widely (skewed routing),
// one tile height for all of them makes the small groups' ragged tiles much of the work. Each group's rows
// then take whole tiles of the largest height, and its last rows the height that covers them at the least
// cost; the kernel runs once per height used, each pass over its own visits, the passes side by side.
// On a GPU both the heights and the single height they are weighed against are chosen by the grid's time
// on the device's compute units (visits_time), not by work alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tiling.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm {

struct GmmTileHeights {
  // The passes' heights, largest first; one: a single pass, every group in tiles of heights[0].
  std::vector<int64_t> heights;
  int64_t largest = 0;  // the height of each group's whole tiles (the range's largest)
  int64_t overhead = 0;  // each visit's cost beside its rows (the range's), which the remainders weigh
  // The one height whose visits take the least time, whether or not the passes were taken: what a plan
  // that cannot run the passes takes instead.
  int64_t single = 0;
  // Per active group: the height of the tiles after its whole tiles of `largest` (0: no rows left).
  std::vector<int64_t> remainder;
  // The rows of each active group that the pass of heights[pass] takes, relative to the group's first row.
  std::vector<GroupRows> rows(size_t pass, const ActiveGroups& groups) const;
};

// What the visits run on: each visit's workgroups (the grid's n tiles) and the device's compute units.
struct VisitSlots {
  int64_t tiles_n = 1, units = 1;
};

// Visits of one height: `visits` of them, each `cost` rows' worth (visits_cost) on each of its n tiles.
struct VisitRun {
  int64_t visits = 0, cost = 0;
};

// The time, in rows' worth, of runs of visits dispatched in order (a gmm's passes, largest height first):
// each workgroup starts on the compute unit that frees first and takes its cost there. The workgroups a
// unit holds at once share its rate, so a unit is taken as running one at a time at its full rate: a grid
// of 1.1 waves takes two tiles' time, and smaller tiles after larger ones fill the units the larger leave
// idle. Past kListedWorkgroups the last wave is a small share: the work spread evenly, or the costliest.
int64_t visits_time(std::span<const VisitRun> runs, const VisitSlots& slots);
inline constexpr int64_t kListedWorkgroups = int64_t(1) << 16;

// Passes are taken where their time is at most this share of one height's (fewer passes are cheaper to
// dispatch and compile): 7/8.
inline constexpr int64_t kTileHeightsGainNumerator = 7, kTileHeightsGainDenominator = 8;

// The heights for the active groups over `range` (powers of two, gmm_m_tile_range), on a GPU.
//  - One height: the one whose visits take the least time (visits_time; ties to the larger), each visit
//    costing its height plus range.overhead rows (visits_cost). By work alone (pick_tm) a grid just over
//    a whole number of waves takes the tiles that compute the fewest rows, and waits on its last wave.
//  - Heights per group: a group's rows past its whole tiles of range.largest take the height whose visits
//    cost least (ties to the larger one), a pass per height. Taken where their time is at most 7/8 of the
//    one height's; else the result is that height alone, with no remainders.
GmmTileHeights gmm_tile_heights(const ActiveGroups& groups, const MTileRange& range, const VisitSlots& slots);

}  // namespace vkgmm
