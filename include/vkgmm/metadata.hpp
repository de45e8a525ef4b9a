// Group metadata: which (group, m tile) pairs a grid visits. One source of truth for the visit rules.
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

// Preconditions (checked by the plans, asserted here): group sizes >= 0 with sum <= m, tm >= 1,
// 0 <= start_group, start_group + num_groups <= G.
GroupMetadata make_group_metadata(std::span<const int32_t> group_sizes, int64_t m, int64_t tm,
                                  int64_t start_group, int64_t num_groups, bool visit_empty_groups);

}  // namespace vkgmm
