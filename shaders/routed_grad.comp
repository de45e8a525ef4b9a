#version 450
// The gradient of a routed gmm's epilogue, between the routed backward's matmuls (VKGMM_GRAD_PUSH in
// interface.h says what each word holds): from the pre-activation h (saved by the forward or recomputed)
// and d_out, each local slot's d_h, written per slot (the d_lhs gmm's input) and in expert order next to
// the slot's gathered lhs row (the d_rhs and d_bias tgmms' inputs), and with a combine the routing
// weights' gradient. It binds the split layout, for the bindings past the plain six (interface.h).
//
// One workgroup per row of expert order; its invocations stride over the row's columns, and a combined
// row's dot product is summed in shared memory in a fixed tree: the same bits on every run.
#extension GL_GOOGLE_include_directive : require

#include "interface.h"
#include "dtype16.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;  // a power of two
layout(constant_id = VKGMM_ID_OUT_TYPE) const uint OUT_TYPE = DT_F32;  // d_out's (the forward's out)
layout(constant_id = VKGMM_ID_LHS_TYPE) const uint LHS_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_GRAD_COMBINED) const bool COMBINED = false;
layout(constant_id = VKGMM_ID_GRAD_ACCUMULATE) const bool ACCUMULATE = false;
layout(constant_id = VKGMM_ID_GRAD_ACTIVATION) const uint ACTIVATION = VKGMM_ACT_NONE;
const bool GATED = ACTIVATION != VKGMM_ACT_NONE;

layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_LHS) readonly buffer LhsBuf { uint lhs_buf[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_D_OUT) readonly buffer DOutBuf { uint d_out_buf[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_WORK) buffer WorkBuf { float work[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_WEIGHTS) readonly buffer WeightsBuf { float weights[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_ROUTE) readonly buffer RouteBuf { int route[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_D_WEIGHTS) buffer DWeightsBuf { float d_weights[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_PRE) readonly buffer PreBuf { float pre[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_D_H) writeonly buffer DhBuf { float d_h[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_SORTED) writeonly buffer SortedBuf { float sorted[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_GATHERED) writeonly buffer GatheredBuf { float gathered[]; };

layout(push_constant) uniform Params { VKGMM_GRAD_PUSH(VKGMM_PUSH_FIELD) } pc;

// Element i of a buffer of TYPE (16-bit elements two to a word).
#define VKGMM_GRAD_LOAD(NAME, BUF, TYPE)                                  \
  float NAME(uint i) {                                                    \
    if (TYPE == DT_F32) return uintBitsToFloat(BUF[i]);                   \
    uint w = BUF[i >> 1];                                                 \
    return decode16((i & 1u) != 0u ? (w >> 16) : (w & 0xffffu), TYPE);    \
  }
VKGMM_GRAD_LOAD(load_lhs, lhs_buf, LHS_TYPE)
VKGMM_GRAD_LOAD(load_d_out, d_out_buf, OUT_TYPE)

#include "activation.glsl"

shared float dot_part[gl_WorkGroupSize.x];

void main() {
  const uint lid = gl_LocalInvocationIndex, lanes = gl_WorkGroupSize.x;
  // The local slots' rows: the routing build's offset past the last local expert, at most the slots.
  const uint local_rows = min(uint(route[pc.offsets_off + pc.num_local]), pc.slots);
  for (uint r = gl_WorkGroupID.x; r < pc.slots; r += gl_NumWorkGroups.x) {
    // The map holds a slot for every row; a value out of range (never written by the build) is skipped.
    const uint s = uint(route[pc.map_off + r]);
    const bool local = r < local_rows && s < pc.slots;
    if (lid == 0u) work[pc.ones_off + r] = 1.0;
    float dot = 0.0;
    if (local) {
      const uint t = s / pc.top_k;
      const float w = COMBINED ? weights[pc.weights_off + s] : 1.0;
      const uint dy_row = pc.d_out_off + (COMBINED ? t : s) * pc.out_n;
      const uint pre_row = pc.pre_off + s * pc.n, h_row = pc.h_off + s * pc.n, sorted_row = pc.sorted_off + r * pc.n;
      for (uint c = lid; c < pc.out_n; c += lanes) {
        const float d = load_d_out(dy_row + c);
        if (GATED) {
          const float g = pre[pre_row + c], u = pre[pre_row + pc.out_n + c];
          const vec2 dgu = gated_derivatives(g, u) * (w * d);
          if (COMBINED) dot += d * gated_value(g, u);
          d_h[h_row + c] = dgu.x;
          d_h[h_row + pc.out_n + c] = dgu.y;
          sorted[sorted_row + c] = dgu.x;
          sorted[sorted_row + pc.out_n + c] = dgu.y;
        } else {
          if (COMBINED) dot += d * pre[pre_row + c];
          d_h[h_row + c] = w * d;
          sorted[sorted_row + c] = w * d;
        }
      }
      const uint a_src = pc.lhs_off + (s / pc.lhs_div) * pc.k, a_dst = pc.a_off + r * pc.k;
      for (uint c = lid; c < pc.k; c += lanes) gathered[a_dst + c] = load_lhs(a_src + c);
    }
    if (COMBINED) {
      // The row's dot product, in a fixed order; every slot's gradient is written (0 where not local).
      dot_part[lid] = dot;
      barrier();
      for (uint half_lanes = lanes / 2u; half_lanes > 0u; half_lanes /= 2u) {
        if (lid < half_lanes) dot_part[lid] += dot_part[lid + half_lanes];
        barrier();
      }
      if (lid == 0u && s < pc.slots) {
        const uint at = pc.d_weights_off + s;
        d_weights[at] = ACCUMULATE ? d_weights[at] + dot_part[0] : dot_part[0];
      }
      barrier();
    }
  }
}
