#version 450
// Routing by expert ids, on the device: the router's ids [T, top_k] (int32, never read on the host)
// become the group sizes of the metadata build that follows (shaders/metadata.comp) and the row map
// that gathers lhs rows and scatters results (shaders/gmm.comp, ROUTED). See VKGMM_ROUTING_PUSH.
//
// Row order is stable: the local experts' slots first, expert by expert, each expert's slots in slot
// (token) order, then every other slot in slot order. So every slot has exactly one row, whatever the
// ids hold: an id outside the window, -1, or out of range (below -1, or >= num_experts: flagged) only
// makes its slot a row of no expert, filled like any row outside the active groups.
//
// One workgroup: each invocation counts a contiguous chunk of slots per bucket (the local experts and
// one bucket for the rest) into the workspace; per bucket, the chunks' counts are scanned across
// invocations, offset by the buckets before it; then each invocation places its chunk's slots in order.
// Every loop is bounded by the slot count or the bucket count.
#extension GL_GOOGLE_include_directive : require

#include "interface.h"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;
layout(constant_id = VKGMM_ID_ROUTE_WEIGHTED) const bool WEIGHTED = false;

layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer IdsBuf { int ids[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_RHS) readonly buffer WeightsBuf { uint weights[]; };
// coherent: invocations read counts other invocations wrote (after memoryBarrierBuffer + barrier).
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) coherent buffer WorkBuf { int work[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_EXISTING) buffer StatusBuf { uint status_word[]; };

layout(push_constant) uniform Params { VKGMM_ROUTING_PUSH(VKGMM_PUSH_FIELD) } pc;

shared uint part[VKGMM_METADATA_INVOCATIONS];
shared uint flags;

// Slot s's bucket: its local expert (id - group_offset), or num_local for every other slot.
uint bucket_of(uint s, inout uint bad) {
  int id = ids[pc.ids_off + s];
  if (id < -1 || (pc.num_experts > 0u && id >= 0 && uint(id) >= pc.num_experts)) {
    bad |= VKGMM_STATUS_BAD_ID;
    return pc.num_local;
  }
  if (id < 0 || uint(id) < pc.group_offset) return pc.num_local;
  uint e = uint(id) - pc.group_offset;
  return e < pc.num_local ? e : pc.num_local;
}

void main() {
  const uint lid = gl_LocalInvocationIndex, lanes = gl_WorkGroupSize.x;
  const uint B = pc.num_local + 1u, S = pc.slots;
  uint bad = 0u;
  if (lid == 0u) flags = 0u;

  // 1. Counts of this invocation's chunk of slots, per bucket: row lid of counts[lanes][B].
  const uint chunk = (S + lanes - 1u) / lanes;
  const uint s0 = min(lid * chunk, S), s1 = min(s0 + chunk, S);
  const uint mine = pc.counts_off + lid * B;
  for (uint b = 0u; b < B; ++b) work[mine + b] = 0;
  for (uint s = s0; s < s1; ++s) work[mine + bucket_of(s, bad)] += 1;
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
      uint c = uint(work[pc.counts_off + i * B + b]);
      work[pc.counts_off + i * B + b] = int(run);
      run += c;
    }
    if (b < pc.num_local) work[pc.sizes_off + b] = int(run);
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
    for (uint i = 0u; i < lanes; ++i) work[pc.counts_off + i * B + b] += int(offset);
    if (b < pc.num_local) offset += uint(work[pc.sizes_off + b]);
  }
  memoryBarrierBuffer();
  barrier();

  // 3. Each slot of the chunk, in order, takes the next row of its bucket.
  for (uint s = s0; s < s1; ++s) {
    uint b = bucket_of(s, bad);
    uint r = uint(work[mine + b]);
    work[mine + b] = int(r + 1u);
    // r < S whenever the ids read the same in both passes; ids rewritten while this runs (a race the
    // app owns) must still not write past the map.
    if (r >= S) continue;
    work[pc.map_off + r] = int(s);
    if (WEIGHTED) work[pc.weight_rows_off + r] = int(weights[pc.weights_off + s]);
  }

  atomicOr(flags, bad);
  barrier();
  if (lid == 0u) status_word[pc.status_off] = flags;
}
