#version 450
// Bench only (the unfused chain baseline, bench/routed.cpp), step (a): what an engine without vkgmm's
// routing does first. From the router's ids [T * top_k] (int32, all in [0, E)): each expert's slot count
// (the group sizes of a grouped gemm), and a stable permutation into expert order: perm[pos] = slot and
// inv[slot] = pos, each expert's slots in slot (token) order.
//
// One workgroup; each invocation owns experts lid, lid + L, ...: it counts its experts' slots, one
// invocation scans the counts, then each places its experts' slots. O(E * S / L) reads: small next to the
// gemm at every shape the bench runs (E = 128, S <= 4096).
#extension GL_GOOGLE_include_directive : require
#include "../../shaders/interface.h"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer IdsBuf { int ids[]; };
// sizes [E] at sizes_off, base [E] at base_off, perm [S] at perm_off, inv [S] at inv_off (int32 words).
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) coherent buffer WorkBuf { int work[]; };

layout(push_constant) uniform Params {
  uint slots, experts, sizes_off, base_off, perm_off, inv_off;
} pc;

void main() {
  const uint lid = gl_LocalInvocationIndex, lanes = gl_WorkGroupSize.x;
  for (uint e = lid; e < pc.experts; e += lanes) {
    int c = 0;
    for (uint s = 0u; s < pc.slots; ++s) c += ids[s] == int(e) ? 1 : 0;
    work[pc.sizes_off + e] = c;
  }
  memoryBarrierBuffer();
  barrier();
  if (lid == 0u) {
    int run = 0;
    for (uint e = 0u; e < pc.experts; ++e) {
      work[pc.base_off + e] = run;
      run += work[pc.sizes_off + e];
    }
  }
  memoryBarrierBuffer();
  barrier();
  for (uint e = lid; e < pc.experts; e += lanes) {
    int pos = work[pc.base_off + e];
    for (uint s = 0u; s < pc.slots; ++s)
      if (ids[s] == int(e)) {
        work[pc.perm_off + uint(pos)] = int(s);
        work[pc.inv_off + s] = pos;
        ++pos;
      }
  }
}
