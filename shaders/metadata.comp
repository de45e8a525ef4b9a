#version 450
// Group metadata built on the device, from group sizes the app's shaders wrote (int32 [G], never read
// on the host): the same words the host path uploads (host/metadata.cpp), into the plan's workspace.
//
// - group_offsets[G + 1]: prefix sums of the sizes, each size taken in [0, m] and every sum clamped at
//   m, so whatever the sizes hold no offset leaves [0, m] and no kernel reads or writes a row past m.
// - with VISITS (gmm): the visits of make_gmm_visits (each active group's tiles from its first row, then
//   fill visits below and above the active rows) in max_visits slots, the plan's bound on the list, with
//   VKGMM_NO_VISIT in the others, which the gmm kernel's workgroups skip. For the upper-bound grid the
//   visits are spread evenly over the slots; for the indirect and persistent grids (dispatch_off > 0) they
//   fill the first R slots and the dispatch command for R visits is written too, then R (interface.h).
//   With HEIGHTS, a list per pass of the kernel, each group's rows divided among the passes' heights.
// - with TGMM_SPLIT (tgmm): the work items of its split reduction and the combine's list (tgmm_split.glsl).
// - the status word: VKGMM_STATUS_* bits, 0 for sizes that keep the contract.
// With ROUTE the sizes are not the app's: a prologue (shaders/routing.glsl) counts the router's ids per
// local expert into the workspace and orders the slots, in the same dispatch, or with ROUTE_GIVEN copies
// another plan's counts and order of the same slots.
//
// One workgroup: each invocation takes a contiguous chunk of groups, the chunks' sums are scanned in
// shared memory by invocation 0 (VKGMM_METADATA_INVOCATIONS terms). Every loop is bounded by G,
// G_local, max_visits or later_visits.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require

#include "interface.h"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;
#include "invocation.glsl"
layout(constant_id = VKGMM_ID_META_VISITS) const bool VISITS = false;
layout(constant_id = VKGMM_ID_META_ROUTE) const bool ROUTE = false;
layout(constant_id = VKGMM_ID_META_ROUTE_WEIGHTED) const bool ROUTE_WEIGHTED = false;
layout(constant_id = VKGMM_ID_META_ROUTE_SHARED_COUNTS) const uint ROUTE_SHARED_COUNTS = 0;
layout(constant_id = VKGMM_ID_META_ROUTE_GIVEN) const bool ROUTE_GIVEN = false;
layout(constant_id = VKGMM_ID_META_TGMM_SPLIT) const bool TGMM_SPLIT = false;
layout(constant_id = VKGMM_ID_META_HEIGHTS) const uint HEIGHTS = 0;
layout(constant_id = VKGMM_ID_META_VISIT_OVERHEAD) const uint VISIT_OVERHEAD = 0;

// The app's group sizes, or with ROUTE its ids (the same binding).
layout(std430, set = 0, binding = VKGMM_BINDING_META_SIZES) readonly buffer SizesBuf { int sizes[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META_IDS) readonly buffer IdsBuf { int ids[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META_WEIGHTS) readonly buffer WeightsBuf { uint weights[]; };
// coherent: invocations read offsets other invocations wrote (after memoryBarrierBuffer + barrier).
layout(std430, set = 0, binding = VKGMM_BINDING_META_WORKSPACE) coherent buffer WorkBuf { int work[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META_STATUS) buffer StatusBuf { uint status_word[]; };
// With ROUTE_GIVEN: the plan whose build ordered the slots, its workspace.
layout(std430, set = 0, binding = VKGMM_BINDING_META_GIVEN) readonly buffer GivenBuf { int given[]; };

layout(push_constant) uniform Params { VKGMM_METADATA_PUSH(VKGMM_PUSH_FIELD) } pc;

shared uint part[VKGMM_METADATA_INVOCATIONS];
shared uint flags;
shared uint total_tiles;

#include "routing.glsl"

#include "group_sizes.glsl"

// Group g's size as taken (group_sizes.glsl).
uint size_of(uint g, inout uint bad) {
  // Routed, the prologue's counts (in [0, slots]) in the workspace.
  return group_size_taken(ROUTE ? work[pc.sizes_off + g] : sizes[pc.sizes_off + g], pc.m, bad);
}

// a + b clamped at m.
uint add_clamped(uint a, uint b, inout uint bad) { return group_sizes_add(a, b, pc.m, bad); }

// Exclusive scan of part[] (invocation 0; the others wait at the barriers around it). Returns nothing:
// part[i] becomes the sum before chunk i, clamped at `limit` when `clamp` (offsets), else plain (tiles).
void scan_parts(bool clamp, inout uint bad) {
  barrier();
  if (local_index() == 0u) {
    uint run = 0u;
    for (uint i = 0u; i < gl_WorkGroupSize.x; ++i) {
      uint t = part[i];
      part[i] = run;
      run = clamp ? add_clamped(run, t, bad) : run + t;
    }
    if (!clamp) total_tiles = run;
  }
  barrier();
}

// Whether the visits are spread over the slots (the upper-bound grid) or packed first (indirect).
bool spread() { return pc.dispatch_off == 0u; }

// The slot of real visit e (< R) among V: e * V / R, spreading the R real visits evenly (exact in 32 bits
// while V < 65536; past that, in order from slot 0, where a few surplus slots no longer matter). The
// indirect grid runs only the first R slots: visit e is slot e.
uint slot_of(uint e, uint R, uint V) { return spread() && V < 65536u ? (e * V) / R : e; }

// Whether slot s holds a real visit: the one real visit that could land there is ceil(s * R / V).
bool slot_used(uint s, uint R, uint V) {
  if (!spread() || V >= 65536u) return s < R;
  uint e = (s * R + V - 1u) / V;
  return e < R && (e * V) / R == s;
}

// The height of the tiles that take a group's last `rest` rows (0 < rest < tm), past its whole tiles of
// tm: tm's or a later pass's (HEIGHTS), the least visits_cost, ties to the larger (host/gmm_tile_heights).
uint remainder_height(uint rest) {
  uint best = pc.tm, best_cost = pc.tm + VISIT_OVERHEAD;
  for (uint j = 1u; j < 32u; ++j) {
    if ((HEIGHTS & (1u << j)) == 0u) continue;
    const uint h = pc.tm >> j, cost = ((rest + h - 1u) / h) * (h + VISIT_OVERHEAD);
    if (cost < best_cost) best = h, best_cost = cost;
  }
  return best;
}

// The rows of a group of `rows` rows that the pass of tiles of `height` takes, from its first row:
// [first, end) (none: first = end). One pass: all of them.
void pass_rows(uint rows, uint height, out uint first, out uint end) {
  first = 0u;
  end = height == pc.tm ? rows : 0u;
  if (HEIGHTS == 0u) return;
  const uint whole = rows / pc.tm * pc.tm, rest = rows - whole;
  const uint h = rest == 0u ? 0u : remainder_height(rest);
  if (height == pc.tm) end = h == pc.tm ? rows : whole;
  else if (h == height) first = whole, end = rows;
}

// One pass's visit list, V slots at word `list` (groups, then first rows, then the indirect command and
// the count): the active groups' tiles of `height` rows from their rows in this pass, then with `fill` the
// fill visits of the rows outside the active groups (below them, then above them).
void build_visits(uint height, uint list, uint V, bool fill, inout uint bad) {
  const uint lanes = gl_WorkGroupSize.x, lid = local_index();
  const uint GL = pc.num_local, go = pc.group_offset;
  const uint groups_off = list, rows_off = list + V;
  const uint achunk = (GL + lanes - 1u) / lanes;
  const uint a0 = min(lid * achunk, GL), a1 = min(a0 + achunk, GL);
  uint tiles = 0u;
  for (uint j = a0; j < a1; ++j) {
    uint first, end;
    pass_rows(uint(work[go + j + 1u]) - uint(work[go + j]), height, first, end);
    tiles += (end - first + height - 1u) / height;
  }
  part[lid] = tiles;
  scan_parts(false, bad);
  // R real visits: the tiles, then the fill visits. They are spread over the V slots (slot_of) with the
  // padding between them, so that a driver handing each thread a contiguous range of workgroups (lavapipe
  // does) gives each about the same work: padding left at the end cost decode 1.5x its host-path time on
  // 2 threads.
  const uint T = total_tiles, fr = pc.fill_rows;
  const uint below = uint(work[go]), above = uint(work[go + GL]);
  const uint f1 = fill ? (below + fr - 1u) / fr : 0u, f2 = fill ? (pc.m - above + fr - 1u) / fr : 0u;
  if (T + f1 + f2 > V) bad |= VKGMM_STATUS_VISITS_CUT;
  const uint R = min(T + f1 + f2, V);
  uint v = part[lid];
  for (uint j = a0; j < a1; ++j) {
    const uint start = uint(work[go + j]);
    uint first, end;
    pass_rows(uint(work[go + j + 1u]) - start, height, first, end);
    for (uint r = start + first; r < start + end; r += height, ++v) {
      if (v < R) {
        work[groups_off + slot_of(v, R, V)] = int(go + j);
        work[rows_off + slot_of(v, R, V)] = int(r);
      }
    }
  }
  for (uint i = lid; i < f1 + f2; i += lanes) {
    uint at = T + i;
    if (at < R) {
      work[groups_off + slot_of(at, R, V)] = VKGMM_FILL_VISIT;
      work[rows_off + slot_of(at, R, V)] = int(i < f1 ? i * fr : above + (i - f1) * fr);
    }
  }
  for (uint at = lid; at < V; at += lanes) {
    if (!slot_used(at, R, V)) {
      work[groups_off + at] = VKGMM_NO_VISIT;
      work[rows_off + at] = 0;
    }
  }
  // The indirect grid's command: (n tiles) x R visits, folded into z past grid_y (the first pass's y,
  // <= the device's maxComputeWorkGroupCount[1]) as the plan's upper-bound grid is: the first pass's z
  // <= the plan's checked z, a later pass's <= ceil(V / grid_y), which the plan checks too.
  // The gmm kernel's workgroups past R (y * z > R) read VKGMM_NO_VISIT slots or stop at V.
  // R after it: the persistent grid's loop bound.
  if (!spread() && lid == 0u) {
    const uint command = list + 2u * V, y = min(R, pc.grid_y);
    work[command] = int(R == 0u ? 0u : pc.grid_x);
    work[command + 1u] = int(y);
    work[command + 2u] = int(y == 0u ? 0u : (R + y - 1u) / y);
    work[command + VKGMM_DISPATCH_COUNT_WORD] = int(R);
  }
}

#include "tgmm_split.glsl"

void main() {
  const uint lid = local_index(), lanes = gl_WorkGroupSize.x;
  uint bad = 0u;
  if (lid == 0u) flags = 0u;
  // The fused combine's tile counters (interface.h), read by the gmm dispatch after this one.
  for (uint i = lid; i < pc.tile_counts; i += lanes) work[pc.tile_count_off + i] = 0;
  if (ROUTE && ROUTE_GIVEN) route_given(bad);
  else if (ROUTE) route_slots(bad);

  // group_offsets: chunk sums, their scan, then each chunk's offsets.
  const uint G = pc.num_groups;
  const uint chunk = (G + lanes - 1u) / lanes;
  const uint g0 = min(lid * chunk, G), g1 = min(g0 + chunk, G);
  uint local_sum = 0u;
  for (uint g = g0; g < g1; ++g) local_sum = add_clamped(local_sum, size_of(g, bad), bad);
  part[lid] = local_sum;
  scan_parts(true, bad);
  uint offset = part[lid];
  if (lid == 0u) work[0] = 0;
  for (uint g = g0; g < g1; ++g) {
    offset = add_clamped(offset, size_of(g, bad), bad);
    work[g + 1u] = int(offset);
  }
  memoryBarrierBuffer();
  barrier();

  if (VISITS) {
    // The first pass's list (with the fill visits), then each later pass's, from the largest height down.
    uint list = pc.visits_off;
    build_visits(pc.tm, list, pc.max_visits, true, bad);
    list += 2u * pc.max_visits + VKGMM_DISPATCH_WORDS;
    for (uint j = 1u; j < 32u; ++j) {
      if ((HEIGHTS & (1u << j)) == 0u) continue;
      build_visits(pc.tm >> j, list, pc.later_visits, false, bad);
      list += 2u * pc.later_visits + VKGMM_DISPATCH_WORDS;
    }
  }

  if (TGMM_SPLIT) build_tgmm_items(bad);

  atomicOr(flags, bad);
  barrier();
  if (lid == 0u) status_word[pc.status_off] = flags;
}
