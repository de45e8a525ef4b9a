#include "gmm_tile_heights.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace vkgmm {

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

int64_t visits_time(std::span<const VisitRun> runs, const VisitSlots& slots) {
  const int64_t units = std::max<int64_t>(slots.units, 1), tiles_n = std::max<int64_t>(slots.tiles_n, 1);
  int64_t workgroups = 0, work = 0, costliest = 0;
  for (const VisitRun& r : runs) {
    workgroups += r.visits * tiles_n;
    work += r.visits * tiles_n * r.cost;
    if (r.visits > 0) costliest = std::max(costliest, r.cost);
  }
  if (workgroups > kListedWorkgroups) return std::max((work + units - 1) / units, costliest);
  // When each unit frees, earliest first: the workgroups of fewer than a wave leave the rest at 0.
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> free_at;
  for (int64_t u = 0; u < std::min(units, workgroups); ++u) free_at.push(0);
  int64_t end = 0;
  for (const VisitRun& r : runs)
    for (int64_t w = 0; w < r.visits * tiles_n; ++w) {
      const int64_t done = free_at.top() + r.cost;
      free_at.pop();
      free_at.push(done);
      end = std::max(end, done);
    }
  return end;
}

GmmTileHeights gmm_tile_heights(const ActiveGroups& groups, const MTileRange& range, const VisitSlots& slots) {
  auto size_of = [&](int64_t i) { return int64_t((*groups.sizes)[size_t(groups.offset + i)]); };
  // One height: the least time, ties to the larger (fewer visits, each load serving more rows).
  int64_t single = range.largest, single_time = INT64_MAX;
  for (int64_t t = range.largest; t >= range.smallest; t /= 2) {
    int64_t visits = 0;
    for (int64_t i = 0; i < groups.count; ++i) visits += visits_of(size_of(i), t);
    const VisitRun run{visits, t + range.overhead};
    const int64_t time = visits_time({&run, 1}, slots);
    if (time < single_time) single = t, single_time = time;
  }
  // Heights per group: whole tiles of the largest, each remainder at the height that covers it cheapest.
  GmmTileHeights h;
  h.largest = range.largest;
  h.overhead = range.overhead;
  h.single = single;
  h.remainder.assign(size_t(groups.count), 0);
  std::vector<VisitRun> runs;  // by height, largest first: the passes' dispatch order
  for (int64_t t = range.largest; t >= range.smallest; t /= 2) runs.push_back({0, t + range.overhead});
  auto run_of = [&](int64_t height) -> VisitRun& {
    size_t at = 0;
    for (int64_t t = range.largest; t > height; t /= 2) ++at;
    return runs[at];
  };
  for (int64_t i = 0; i < groups.count; ++i) {
    const int64_t size = size_of(i), rest = size % range.largest;
    run_of(range.largest).visits += size / range.largest;
    if (rest == 0) continue;
    int64_t best = range.largest;
    for (int64_t t = range.largest / 2; t >= range.smallest; t /= 2)
      if (visits_cost(rest, t, range.overhead) < visits_cost(rest, best, range.overhead)) best = t;
    h.remainder[size_t(i)] = best;
    run_of(best).visits += visits_of(rest, best);
  }
  for (const VisitRun& r : runs)
    if (r.visits > 0) h.heights.push_back(r.cost - range.overhead);
  const bool pays = h.heights.size() >= 2 && visits_time(runs, slots) * kTileHeightsGainDenominator <=
                                                 single_time * kTileHeightsGainNumerator;
  if (!pays) return GmmTileHeights{{single}, single, range.overhead, single, {}};
  return h;
}

}  // namespace vkgmm
