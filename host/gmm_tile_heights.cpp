#include "gmm_tile_heights.hpp"

#include <algorithm>

namespace vkgmm {

namespace {

int64_t visits_cost(int64_t rows, int64_t height, int64_t overhead) {
  return (rows + height - 1) / height * (height + overhead);
}

}  // namespace

std::vector<GroupRows> GmmTileHeights::rows(size_t pass, const ActiveGroups& groups) const {
  std::vector<GroupRows> out(size_t(groups.count));
  const int64_t height = heights.at(pass);
  for (int64_t i = 0; i < groups.count; ++i) {
    const int64_t size = (*groups.sizes)[size_t(groups.offset + i)];
    if (heights.size() == 1) {
      out[size_t(i)] = {0, size};
      continue;
    }
    const int64_t whole = size / largest * largest, rest = remainder[size_t(i)];
    if (height == largest) out[size_t(i)] = {0, rest == largest ? size : whole};
    else if (rest == height) out[size_t(i)] = {whole, size};
  }
  return out;
}

GmmTileHeights gmm_tile_heights(const ActiveGroups& groups, const MTileRange& range, const VisitSlots& slots) {
  GmmTileHeights h;
  h.largest = range.largest;
  h.remainder.assign(size_t(groups.count), 0);
  int64_t cost = 0;
  for (int64_t i = 0; i < groups.count; ++i) {
    const int64_t size = (*groups.sizes)[size_t(groups.offset + i)];
    const int64_t rest = size % range.largest;
    cost += size / range.largest * (range.largest + range.overhead);
    if (rest == 0) continue;
    int64_t best = range.largest;
    for (int64_t t = range.largest / 2; t >= range.smallest; t /= 2)
      if (visits_cost(rest, t, range.overhead) < visits_cost(rest, best, range.overhead)) best = t;
    h.remainder[size_t(i)] = best;
    cost += visits_cost(rest, best, range.overhead);
  }
  // The heights used: the largest where a group has whole tiles of it, and the remainders'.
  auto use = [&](int64_t height) {
    if (height && std::find(h.heights.begin(), h.heights.end(), height) == h.heights.end()) h.heights.push_back(height);
  };
  for (int64_t i = 0; i < groups.count; ++i) {
    if ((*groups.sizes)[size_t(groups.offset + i)] >= range.largest) use(range.largest);
    use(h.remainder[size_t(i)]);
  }
  std::sort(h.heights.rbegin(), h.heights.rend());
  const int64_t single = pick_tm(groups, range.smallest, range.largest, range.overhead);
  int64_t single_cost = 0;
  for (int64_t i = 0; i < groups.count; ++i)
    single_cost += visits_cost((*groups.sizes)[size_t(groups.offset + i)], single, range.overhead);
  // Each visit's cost over its n tiles, spread over the concurrent workgroups, or the costliest visit.
  const int64_t concurrent = std::max<int64_t>(slots.concurrent, 1);
  auto time = [&](int64_t visits_cost, int64_t tallest) {
    return std::max((visits_cost * slots.tiles_n + concurrent - 1) / concurrent, tallest + range.overhead);
  };
  const bool pays = h.heights.size() >= 2 && time(cost, h.heights[0]) * kTileHeightsGainDenominator <=
                                                 time(single_cost, single) * kTileHeightsGainNumerator;
  if (!pays) return GmmTileHeights{{single}, single, {}};
  return h;
}

}  // namespace vkgmm
