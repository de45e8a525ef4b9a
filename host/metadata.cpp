// make_group_metadata: megablox's construction (prefix sums, tile rounding, a visit histogram, repeat and
// roll), extended to an m that is not a multiple of tm.
#include "vkgmm/metadata.hpp"

#include <algorithm>
#include <cassert>

namespace vkgmm {

namespace {

// values[i] repeated counts[i] times, padded (or cut) to `length` with the last value written.
std::vector<int32_t> repeat_to(const std::vector<int32_t>& values, const std::vector<int64_t>& counts,
                               size_t length) {
  std::vector<int32_t> out;
  out.reserve(length);
  for (size_t i = 0; i < values.size() && out.size() < length; ++i)
    for (int64_t c = 0; c < counts[i] && out.size() < length; ++c) out.push_back(values[i]);
  const int32_t pad = out.empty() ? 0 : out.back();
  out.resize(length, pad);
  return out;
}

}  // namespace

std::vector<int32_t> make_group_offsets(std::span<const int32_t> group_sizes) {
  std::vector<int32_t> offsets(group_sizes.size() + 1, 0);
  for (size_t g = 0; g < group_sizes.size(); ++g) offsets[g + 1] = offsets[g] + group_sizes[g];
  return offsets;
}

GroupMetadata make_group_metadata(std::span<const int32_t> group_sizes, int64_t m, int64_t tm,
                                  int64_t start_group, int64_t num_groups, bool visit_empty_groups) {
  const int64_t G = static_cast<int64_t>(group_sizes.size());
  assert(tm >= 1 && m >= 0 && start_group >= 0 && num_groups >= 0 && start_group + num_groups <= G);

  GroupMetadata md;
  md.group_offsets = make_group_offsets(group_sizes);
  assert(md.group_offsets[G] <= m);

  // The last tile may be partial: it still counts as a tile.
  const int64_t tiles_m = (m + tm - 1) / tm;

  // Tiles a group touches: from its start rounded down to its end rounded up. An empty group touches
  // none, or gets one visit when empty groups are visited (tgmm must write their output).
  std::vector<int64_t> group_tiles(G);
  for (int64_t g = 0; g < G; ++g) {
    const int64_t start = md.group_offsets[g], end = md.group_offsets[g + 1];
    if (group_sizes[g] == 0)
      group_tiles[g] = visit_empty_groups ? 1 : 0;
    else
      group_tiles[g] = (end + tm - 1) / tm - start / tm;
  }

  // How often each m tile is visited: once by the group owning its first row, plus once for every
  // other group starting inside it (and, with visit_empty_groups, every empty group placed on it).
  // Tiles visited by nobody (rows past sum(group_sizes)) still get one visit here; the repeat below
  // pads them away, exactly as megablox's histogram does.
  std::vector<int64_t> tile_visits(tiles_m, 1);
  for (int64_t g = 0; g < G; ++g) {
    const int64_t offset = md.group_offsets[g];
    const bool starts_mid_tile = offset % tm != 0;
    const bool extra = group_sizes[g] == 0 ? visit_empty_groups : starts_mid_tile;
    // An empty group at offset == m (m a multiple of tm) points past the last tile: megablox's histogram
    // drops it and the padding gives it the last tile, which is where we clamp it.
    if (extra && offset / tm < tiles_m) tile_visits[offset / tm] += 1;
  }

  const size_t length = static_cast<size_t>(std::max<int64_t>(tiles_m + G - 1, 0));
  std::vector<int32_t> group_iota(G), tile_iota(tiles_m);
  for (int64_t g = 0; g < G; ++g) group_iota[g] = static_cast<int32_t>(g);
  for (int64_t t = 0; t < tiles_m; ++t) tile_iota[t] = static_cast<int32_t>(t);
  // Visits of all groups can exceed tiles_m + G - 1 only through empty-group visits; keep them all so
  // that every visit of the active window is present.
  int64_t total_visits = 0;
  for (int64_t c : group_tiles) total_visits += c;
  const size_t full = std::max<size_t>(length, static_cast<size_t>(total_visits));
  md.group_ids = repeat_to(group_iota, group_tiles, full);
  md.m_tile_ids = repeat_to(tile_iota, tile_visits, full);

  // Sharding: rotate so the visits of start_group come first, and count only the window's visits.
  int64_t first_visit = 0;
  for (int64_t g = 0; g < start_group; ++g) first_visit += group_tiles[g];
  if (full > 0) {
    const size_t shift = static_cast<size_t>(first_visit) % full;
    std::rotate(md.group_ids.begin(), md.group_ids.begin() + shift, md.group_ids.end());
    std::rotate(md.m_tile_ids.begin(), md.m_tile_ids.begin() + shift, md.m_tile_ids.end());
  }
  for (int64_t g = start_group; g < start_group + num_groups; ++g) md.num_tiles += group_tiles[g];
  return md;
}

GmmVisits make_gmm_visits(std::span<const int32_t> group_offsets, int64_t m, int64_t tm, int64_t first_group,
                          int64_t num_groups, int64_t fill_rows) {
  assert(first_group >= 0 && num_groups >= 0 && first_group + num_groups + 1 <= int64_t(group_offsets.size()));
  std::vector<GroupRows> whole(static_cast<size_t>(num_groups));
  for (int64_t i = 0; i < num_groups; ++i)
    whole[size_t(i)] = {0, group_offsets[first_group + i + 1] - group_offsets[first_group + i]};
  return make_gmm_visits(group_offsets, m, tm, first_group, num_groups, fill_rows, whole, true);
}

GmmVisits make_gmm_visits(std::span<const int32_t> group_offsets, int64_t m, int64_t tm, int64_t first_group,
                          int64_t num_groups, int64_t fill_rows, std::span<const GroupRows> rows, bool fills) {
  assert(tm >= 1 && fill_rows >= 1 && first_group >= 0 && first_group + num_groups + 1 <= int64_t(group_offsets.size()));
  assert(int64_t(rows.size()) == num_groups);
  GmmVisits v;
  auto cover = [&](int32_t group, int64_t begin, int64_t end) {
    const int64_t stride = group < 0 ? fill_rows : tm;
    for (int64_t r = begin; r < end; r += stride) {
      v.groups.push_back(group);
      v.row_starts.push_back(static_cast<int32_t>(r));
    }
  };
  for (int64_t i = 0; i < num_groups; ++i) {
    const int64_t start = group_offsets[first_group + i];
    assert(rows[size_t(i)].begin >= 0 && rows[size_t(i)].end <= group_offsets[first_group + i + 1] - start);
    cover(static_cast<int32_t>(first_group + i), start + rows[size_t(i)].begin, start + rows[size_t(i)].end);
  }
  if (!fills) return v;
  cover(-1, 0, group_offsets[first_group]);
  cover(-1, group_offsets[first_group + num_groups], m);
  return v;
}

}  // namespace vkgmm
