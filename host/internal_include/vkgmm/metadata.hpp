// Group metadata: which (group, m tile) pairs a grid visits. One source of truth for the visit rules.
// Internal (host/internal_include/, not installed): for the tests, fuzz targets, CLI and bench only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vkgmm {

// megablox's make_group_metadata, for any m (the last m tile may be partial):
//   group_offsets [G+1]: row where each group starts; group_offsets[G] = sum(group_sizes).
//   group_ids, m_tile_ids [tiles_m + G - 1]: the grid visits (group_ids[i], m_tile_ids[i]) for
//     i < num_tiles; the visits of group start_group come first. Entries past num_tiles are padding.
//   num_tiles: visits of groups [start_group, start_group + num_groups).
// A group visits every m tile its rows touch, in order; with visit_empty_groups an empty group gets one
// visit (of the tile its offset falls in, clamped to the last tile) so that tgmm can write its output.
struct GroupMetadata {
  std::vector<int32_t> group_offsets;
  std::vector<int32_t> group_ids;
  std::vector<int32_t> m_tile_ids;
  int64_t num_tiles = 0;
};

// The row where each group starts: [G+1] prefix sums of group_sizes, starting at 0.
std::vector<int32_t> make_group_offsets(std::span<const int32_t> group_sizes);

// Preconditions (checked by the plans, asserted here): group sizes >= 0 with sum <= m, tm >= 1,
// 0 <= start_group, start_group + num_groups <= G.
GroupMetadata make_group_metadata(std::span<const int32_t> group_sizes, int64_t m, int64_t tm,
                                  int64_t start_group, int64_t num_groups, bool visit_empty_groups);

// gmm's visit list. Unlike megablox's m tiles, gmm's tiles start at each group's first row: tm rows at a
// time through every non-empty group of [first_group, first_group + num_groups), so no tile holds rows
// of two groups and no boundary costs an extra tile (megablox aligns tiles to m because a TPU output
// block must be revisited consecutively; gmm's visits never accumulate into each other). Then fill
// visits (group -1), fill_rows rows at a time (cheap work, so fewer visits) through the rows outside the
// active groups. Every row of [0, m) is in exactly one visit; a visit's rows are
// [row_start, min(row_start + its stride, end of its range)), the stride tm or fill_rows.
struct GmmVisits {
  std::vector<int32_t> groups;      // the group, or -1 for a fill visit
  std::vector<int32_t> row_starts;  // its first row
};
GmmVisits make_gmm_visits(std::span<const int32_t> group_offsets, int64_t m, int64_t tm, int64_t first_group,
                          int64_t num_groups, int64_t fill_rows);

// Some of each group's rows, relative to its first row: [begin, end).
struct GroupRows {
  int64_t begin = 0, end = 0;
};
// One pass of gmm's tile heights per group (host/gmm_tile_heights.hpp): rows[i] of active group
// first_group + i, tm at a time from rows[i].begin, and with `fills` the fill visits as above. The passes
// of a plan take every row of [0, m) once between them.
GmmVisits make_gmm_visits(std::span<const int32_t> group_offsets, int64_t m, int64_t tm, int64_t first_group,
                          int64_t num_groups, int64_t fill_rows, std::span<const GroupRows> rows, bool fills);

}  // namespace vkgmm
