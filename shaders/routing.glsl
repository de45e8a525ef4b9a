// Routing by expert ids on the device, the prologue of the metadata build (shaders/metadata.comp with
// ROUTE): the router's ids [T, top_k] (int32, never read on the host) become the group sizes the build
// goes on with and the row map that gathers lhs rows and scatters results (shaders/gmm.comp, ROUTED).
// See interface.h, VKGMM_ID_META_ROUTE.
//
// Row order is stable: the local experts' slots first, expert by expert, each expert's slots in slot
// (token) order, then every other slot in slot order. So every slot has exactly one row, whatever the
// ids hold: an id outside the window, -1, or out of range (below -1, or >= num_experts: flagged) only
// makes its slot a row of no expert, filled like any row outside the active groups.
//
// Each invocation counts a contiguous chunk of slots per bucket (the local experts and one bucket for the
// rest) into the workspace (or, with at most one slot per invocation, places its slot directly:
// route_few_slots); per bucket, the chunks' counts are scanned across invocations, offset by the
// buckets before it; then each invocation places its chunk's slots in order. Every loop is bounded by
// the slot count or the bucket count. The includer declares ids, weights, work (coherent), given, part[] and pc.

// The counts, counts[lanes][B]: shared memory where the plan found room for them, else the workspace.
shared int route_counts[ROUTE_SHARED_COUNTS + 1u];
int count_at(uint i) { return ROUTE_SHARED_COUNTS > 0u ? route_counts[i] : work[pc.counts_off + i]; }
void set_count(uint i, int v) {
  if (ROUTE_SHARED_COUNTS > 0u) route_counts[i] = v;
  else work[pc.counts_off + i] = v;
}

#include "route_ids.glsl"

// Slot s's bucket: its local expert, or route_experts (the bucket of every other slot).
uint bucket_of(uint s, inout uint bad) { return route_local_expert(ids[pc.ids_off + s], bad); }

// At most one slot per invocation (a decode's few tokens): invocation lid places slot lid itself. Its row
// is the count of the slots before it in that order (every slot of an earlier bucket, and the earlier
// slots of its own), each expert's size the count of its slots: the rows and sizes of the counting path
// below, from one read of each id (the buckets in part[]), with no counts to zero, no scans and two
// barriers. Every loop is bounded by the slot count (at most the invocations), the sizes' by
// route_experts / invocations too.
void route_few_slots(inout uint bad) {
  const uint lid = local_index(), lanes = gl_WorkGroupSize.x, S = pc.slots;
  if (lid < S) part[lid] = bucket_of(lid, bad);
  barrier();
  if (lid < S) {
    const uint mine = part[lid];
    uint row = 0u;
    for (uint s = 0u; s < S; ++s) row += part[s] < mine || (part[s] == mine && s < lid) ? 1u : 0u;
    work[pc.map_off + row] = int(lid);
    if (ROUTE_WEIGHTED) work[pc.weight_rows_off + row] = int(weights[pc.weights_off + lid]);
  }
  for (uint e = lid; e < pc.route_experts; e += lanes) {
    uint n = 0u;
    for (uint s = 0u; s < S; ++s) n += part[s] == e ? 1u : 0u;
    work[pc.sizes_off + e] = int(n);
  }
  // The sizes and the map visible to the whole workgroup, and part[] read, before the build goes on.
  memoryBarrierBuffer();
  barrier();
}

// The routing prologue: counts (as group sizes), row map, rows' weights; bad gets VKGMM_STATUS_BAD_ID.
void route_slots(inout uint bad) {
  const uint lid = local_index(), lanes = gl_WorkGroupSize.x;
  const uint B = pc.route_experts + 1u, S = pc.slots;
  if (S <= lanes) {
    route_few_slots(bad);
    return;
  }

  // 1. Counts of this invocation's chunk of slots, per bucket: row lid of counts[lanes][B].
  const uint chunk = (S + lanes - 1u) / lanes;
  const uint s0 = min(lid * chunk, S), s1 = min(s0 + chunk, S);
  const uint mine = lid * B;
  for (uint b = 0u; b < B; ++b) set_count(mine + b, 0);
  for (uint s = s0; s < s1; ++s) {
    uint at = mine + bucket_of(s, bad);
    set_count(at, count_at(at) + 1);
  }
  memoryBarrierBuffer();
  barrier();

  // 2. Per bucket (each invocation a chunk of them): the counts scanned across invocations, the total
  // as the expert's group size; then the buckets' offsets (their totals scanned) added to the bases.
  const uint bchunk = (B + lanes - 1u) / lanes;
  const uint b0 = min(lid * bchunk, B), b1 = min(b0 + bchunk, B);
  uint chunk_total = 0u;
  for (uint b = b0; b < b1; ++b) {
    uint run = 0u;
    for (uint i = 0u; i < lanes; ++i) {
      uint c = uint(count_at(i * B + b));
      set_count(i * B + b, int(run));
      run += c;
    }
    if (b < pc.route_experts) work[pc.sizes_off + b] = int(run);
    chunk_total += run;
  }
  part[lid] = chunk_total;
  barrier();
  if (lid == 0u) {
    uint run = 0u;
    for (uint i = 0u; i < lanes; ++i) {
      uint t = part[i];
      part[i] = run;
      run += t;
    }
  }
  barrier();
  uint offset = part[lid];
  for (uint b = b0; b < b1; ++b) {
    for (uint i = 0u; i < lanes; ++i) set_count(i * B + b, count_at(i * B + b) + int(offset));
    if (b < pc.route_experts) offset += uint(work[pc.sizes_off + b]);
  }
  memoryBarrierBuffer();
  barrier();

  // 3. Each slot of the chunk, in order, takes the next row of its bucket.
  for (uint s = s0; s < s1; ++s) {
    uint b = bucket_of(s, bad);
    uint r = uint(count_at(mine + b));
    set_count(mine + b, int(r + 1u));
    // r < S whenever the ids read the same in both passes; ids rewritten while this runs (a race the
    // app owns) must still not write past the map.
    if (r >= S) continue;
    work[pc.map_off + r] = int(s);
    if (ROUTE_WEIGHTED) work[pc.weight_rows_off + r] = int(weights[pc.weights_off + s]);
  }
  // The sizes (and the map) visible to the whole workgroup before the build goes on.
  memoryBarrierBuffer();
  barrier();
}

// ROUTE_GIVEN: another plan's build of the same ids and window (its counts and row map, at given[]) taken
// as this one's: each loop strides over the experts or the slots. The ids are still read, each once, so
// that the status word says what this build would; a map entry past the slots, which no build writes,
// becomes its own row's slot (flagged): every row still reads and writes inside its views.
void route_given(inout uint bad) {
  const uint lid = local_index(), lanes = gl_WorkGroupSize.x, S = pc.slots;
  for (uint e = lid; e < pc.route_experts; e += lanes)
    work[pc.sizes_off + e] = clamp(given[pc.given_counts_off + e], 0, int(S));
  for (uint r = lid; r < S; r += lanes) {
    uint s = uint(given[pc.given_map_off + r]);
    if (s >= S) {
      s = r;
      bad |= VKGMM_STATUS_BAD_ROUTING;
    }
    work[pc.map_off + r] = int(s);
    if (ROUTE_WEIGHTED) work[pc.weight_rows_off + r] = int(weights[pc.weights_off + s]);
    bucket_of(r, bad);
  }
  memoryBarrierBuffer();
  barrier();
}
