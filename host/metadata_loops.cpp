// The loop counts of metadata.comp, routing.glsl and combine.comp, loop by loop: a change to one of their
// loops changes its term here.
#include "metadata_loops.hpp"

#include <algorithm>
#include <bit>

namespace vkgmm {

namespace {

constexpr uint64_t kLanes = VKGMM_METADATA_INVOCATIONS;

uint64_t up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// A loop of `trips` iterations, and the pass that leaves it, as reduction_loop_iterations counts it (a
// margin: a tgmm walking 65535 rows alone in one loop summed them all, 65536 summed 65535).
uint64_t loop(uint64_t trips) { return trips + 1; }

// Invocation 0's loops, grouped by the argument that drives them (the scans over the lanes, in none).
struct Terms {
  uint64_t groups = 0, rows = 0, slots = 0, rest = 0;
};

Terms build_terms(const PlanCore::DeviceMetadata& d, const PlanCore::Routing* r) {
  Terms t;
  // The fused combine's tile counters zeroed, a lane's share.
  t.rest += loop(up(r ? r->fused_tiles : 0, kLanes));
  const uint64_t slots = r ? r->slots() : 0;
  if (r && !r->counts_slots()) {
    // route_few_slots: its slot's row (a loop over the slots), its share of the experts' sizes (a loop over
    // the slots each).
    const uint64_t expert_share = up(r->num_local, kLanes);
    t.slots += loop(slots);
    t.groups += loop(expert_share) + expert_share * loop(slots);
  } else if (r) {
    // route_slots: its row of counts zeroed (every bucket), its chunk of slots counted, its chunk of
    // buckets scanned across the lanes then offset (a loop over the lanes per bucket), invocation 0's scan
    // of the buckets' totals, its chunk of slots placed.
    const uint64_t buckets = uint64_t(r->num_local) + 1, bucket_chunk = up(buckets, kLanes);
    const uint64_t slot_chunk = up(slots, kLanes);
    t.groups += loop(buckets) + 2 * (loop(bucket_chunk) + bucket_chunk * loop(kLanes));
    t.slots += 2 * loop(slot_chunk);
    t.rest += loop(kLanes);
  }
  // The group offsets: a chunk of groups summed then written, invocation 0's scan of the chunks.
  t.groups += 2 * loop(up(d.num_groups, kLanes));
  t.rest += loop(kLanes);
  if (d.visits) {
    // A chunk of the active groups' tiles counted, scanned; their visits written: one per tile, and
    // however the rows fall, a chunk's tiles are at most ceil(m / tm) plus one per group (a loop each,
    // in a loop over the chunk); the fill visits (at most ceil(m / fill_rows) + 1), a lane's share; the
    // padding slots, a lane's share.
    const uint64_t chunk = up(d.num_local, kLanes);
    t.groups += loop(chunk) + loop(chunk) + 2 * chunk;
    t.rows += up(d.m, d.tm) + loop(up(up(d.m, d.fill_rows) + 1, kLanes)) + loop(up(d.max_visits, kLanes));
    t.rest += loop(kLanes);
    // Tile heights per group: each later pass's list the same way, without fill visits; every group's
    // rows in each list ask for its remainder's height (a loop over the heights' bits).
    for (uint32_t j = 1; j < 32; ++j) {
      if (!(d.heights >> j & 1u)) continue;
      const uint64_t height = std::max<uint64_t>(d.tm >> j, 1);
      t.groups += loop(chunk) + loop(chunk) + 2 * chunk;
      t.rows += up(d.m, height) + loop(0) + loop(up(d.later_visits, kLanes));
      t.rest += loop(kLanes);
    }
    if (d.heights) t.groups += 2 * chunk * (std::popcount(d.heights) + 1) * loop(31);
  }
  if (d.split.slots) {
    // tgmm_split.glsl: a chunk of the active groups summed, its long ones counted, its items counted, two
    // scans of the chunks' counts, its items written (at most `slots` chunks per group); the padding, a
    // lane's share.
    const uint64_t chunk = up(d.num_local, kLanes);
    t.groups += 4 * loop(chunk) + chunk * loop(d.split.slots) + loop(up(d.max_visits, kLanes));
    t.rest += 2 * loop(kLanes);
  }
  return t;
}

}  // namespace

LoopCount metadata_build_loops(const PlanCore::DeviceMetadata& d, const PlanCore::Routing* r) {
  const Terms t = build_terms(d, r);
  LoopCount c;
  c.iterations = t.groups + t.rows + t.slots + t.rest;
  const std::string slots = r ? "T * top_k = " + std::to_string(r->slots()) + " slots" : "";
  if (t.slots >= std::max(t.rows, t.groups)) {
    c.what = slots;
    c.remedy = "route fewer tokens per call";
  } else if (t.rows >= t.groups) {
    c.what = (r ? slots : "m = " + std::to_string(d.m) + " rows") + " in m tiles of " + std::to_string(d.tm);
    c.remedy = r ? "route fewer tokens per call, or take a larger m tile"  //
                 : "fewer rows per call, or a larger m tile";
  } else {
    c.what = r ? "num_rhs_groups = " + std::to_string(r->num_local) + " local experts"
               : "device_group_sizes.count = " + std::to_string(d.num_groups) + " groups";
    c.remedy = r ? "fewer local experts per call" : "fewer groups per call";
  }
  return c;
}

LoopCount combine_loops(uint32_t top_k, uint32_t out_n, uint32_t columns) {
  // An invocation's columns, each a sum over the token's top_k slots.
  const uint64_t trips = up(out_n, uint64_t(columns) * VKGMM_COMBINE_INVOCATIONS);
  return {loop(trips) + trips * loop(top_k), "top_k = " + std::to_string(top_k) + " slots per token",
          "fewer experts per token"};
}

}  // namespace vkgmm
