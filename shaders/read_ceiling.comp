#version 450
// The device's practical read bandwidth: every subgroup streams its own contiguous chunk of the `count`
// 16-byte vectors from `first`, its lanes side by side (a GPU's loads coalesce; a CPU driver, which
// runs a workgroup's subgroups one after another, reads each chunk front to back), and each workgroup
// writes one word, the sum of what it read, so that no load is dead. Bytes read per dispatch = count * 16. Variants by define, as each needs what the base module must not declare:
// VKGMM_TEXEL reads through the buffer's uniform texel view (binding LHS_TEXEL; `first` counts texels
// from the buffer's start), else through the storage binding LHS (from the binding's start);
// VKGMM_SUBGROUP_REDUCE sums each subgroup with subgroupAdd before the shared-memory step, else the
// whole workgroup reduces in shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef VKGMM_SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

#include "bindings.glsl"

// A power of two (the shared-memory reduction halves it).
layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;

layout(push_constant) uniform Params { VKGMM_READ_PUSH(VKGMM_PUSH_FIELD) } pc;

// Loads in flight per invocation and iteration: a GPU hides memory latency with them, a CPU driver
// turns them into wider gathers.
const uint UNROLL = 4;

shared uint partial[gl_WorkGroupSize.x];

uvec4 load(uint i) {
#ifdef VKGMM_TEXEL
  return texelFetch(lhs_tex, int(pc.first + i));
#else
  return lhs_v4[pc.first + i];
#endif
}

void main() {
  // Subgroups of one size, so each chunk is whole rounds of UNROLL * width vectors and only the last
  // stream's is ragged. The width is the lanes a subgroup holds (the workgroup, a power of two, fills its
  // subgroups alike), not gl_SubgroupSize: a driver may run fewer than it reports (Intel's SIMD8 or SIMD16
  // under 32), and striding by the reported size would skip vectors.
  const uint width = gl_WorkGroupSize.x / gl_NumSubgroups, lane = gl_SubgroupInvocationID;
  const uint streams = gl_NumWorkGroups.x * gl_NumSubgroups;
  const uint stream = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  const uint round_size = UNROLL * width;
  const uint rounds = (pc.count + round_size - 1) / round_size;
  const uint per_stream = (rounds + streams - 1) / streams;
  const uint begin = min(stream * per_stream * round_size, pc.count);
  const uint end = min(begin + per_stream * round_size, pc.count);
  uvec4 acc = uvec4(0);
  uint i = begin + lane;
  for (; i + (UNROLL - 1) * width < end; i += round_size) {
    uvec4 v[UNROLL];
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) v[u] = load(i + u * width);
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) acc += v[u];
  }
  for (; i < end; i += width) acc += load(i);
  uint sum = acc.x + acc.y + acc.z + acc.w;
#ifdef VKGMM_SUBGROUP_REDUCE
  sum = subgroupAdd(sum);
  if (subgroupElect()) partial[gl_SubgroupID] = sum;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    uint total = 0;
    for (uint s = 0; s < gl_NumSubgroups; ++s) total += partial[s];
    out_buf[pc.out_off + gl_WorkGroupID.x] = total;
  }
#else
  const uint id = gl_LocalInvocationID.x;
  partial[id] = sum;
  barrier();
  for (uint half_ = gl_WorkGroupSize.x / 2; half_ > 0; half_ /= 2) {
    if (id < half_) partial[id] += partial[id + half_];
    barrier();
  }
  if (id == 0) out_buf[pc.out_off + gl_WorkGroupID.x] = partial[0];
#endif
}
