#version 450
// Bench only (the unfused chain baseline), step (d): un-permute and combine. out[t, c] = sum over j
// ascending of weights[t, j] * y[inv[t * top_k + j], c], in fp32, rounded once to the output type
// (out_type: 0 f32, 1 f16, 2 bf16 with round to nearest even); y is the grouped gemm's fp32 result in expert
// order [S, n]. 16-bit outputs: each invocation writes two adjacent columns as one word (n even).
#extension GL_GOOGLE_include_directive : require
#include "../../shaders/interface.h"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer YBuf { float y[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_RHS) readonly buffer WBuf { float weights[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) writeonly buffer OutBuf { uint out_words[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META) readonly buffer WorkBuf { int work[]; };

layout(push_constant) uniform Params { uint tokens, top_k, n, inv_off, out_type; } pc;

float combined(uint t, uint c) {
  float sum = 0.0;
  for (uint j = 0u; j < pc.top_k; ++j) {
    const uint s = t * pc.top_k + j;
    sum += weights[s] * y[uint(work[pc.inv_off + s]) * pc.n + c];
  }
  return sum;
}

uint bf16_bits(float x) {
  uint b = floatBitsToUint(x);
  return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

void main() {
  const uint t = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  const uint x = gl_GlobalInvocationID.x;
  if (t >= pc.tokens) return;
  if (pc.out_type == 0u) {
    if (x < pc.n) out_words[t * pc.n + x] = floatBitsToUint(combined(t, x));
    return;
  }
  const uint half_n = pc.n / 2u;
  if (x >= half_n) return;
  const float a = combined(t, 2u * x), b = combined(t, 2u * x + 1u);
  out_words[t * half_n + x] =
      pc.out_type == 1u ? packHalf2x16(vec2(a, b)) : (bf16_bits(a) | (bf16_bits(b) << 16));
}
