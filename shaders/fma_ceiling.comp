#version 450
// The device's practical FMA ceiling: every invocation runs CHAINS independent fma chains for ITERS
// steps, from registers only (no memory traffic in the loop), and writes one word so nothing is elided.
// FLOPs = invocations * ITERS * CHAINS * 2. The best chain count differs by device (a CPU driver's vector
// registers hold fewer chains than a GPU lane's registers): the probe tries several.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "bindings.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;
layout(constant_id = VKGMM_ID_CEILING_ITERS) const uint ITERS = 4096;
layout(constant_id = VKGMM_ID_CEILING_CHAINS) const uint CHAINS = 16;

layout(push_constant) uniform Params { VKGMM_CEILING_PUSH(VKGMM_PUSH_FIELD) } pc;

void main() {
  float x[CHAINS];
  [[unroll]] for (uint c = 0; c < CHAINS; ++c) x[c] = pc.seed * float(c + gl_LocalInvocationIndex);
  const float a = 0.999, b = 0.0001;
  for (uint it = 0; it < ITERS; ++it)
    [[unroll]] for (uint c = 0; c < CHAINS; ++c) x[c] = fma(x[c], a, b);
  float s = 0.0;
  [[unroll]] for (uint c = 0; c < CHAINS; ++c) s += x[c];
  out_buf[gl_GlobalInvocationID.x] = floatBitsToUint(s);
}
