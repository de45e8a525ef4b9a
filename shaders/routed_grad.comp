#version 450
// The gradient of a routed gmm's epilogue, between the routed backward's matmuls (VKGMM_GRAD_PUSH in
// interface.h says what each word holds): from the pre-activation h (saved by the forward or recomputed)
// and d_out, each local slot's d_h, written per slot (the d_lhs gmm's input) and in expert order next to
// the slot's gathered lhs row (the d_rhs and d_bias tgmms' inputs), and with a combine the routing
// weights' gradient. It binds the split layout, for the bindings past the plain six (interface.h).
//
// One workgroup per row of expert order; each invocation takes 4 adjacent columns at a time, striding over
// the row, and a combined row's dot product is summed in shared memory in a fixed tree: the same bits on
// every run. With VEC4 (the host's choice where n, k and every view's offset are multiples of 4) those
// 4 columns are one vector load or store each, else 4 scalar ones: the same values in the same order, so
// both give the same bits.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require

#include "interface.h"
#include "dtype16.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;  // a power of two
#include "invocation.glsl"
layout(constant_id = VKGMM_ID_OUT_TYPE) const uint OUT_TYPE = DT_F32;  // d_out's (the forward's out)
layout(constant_id = VKGMM_ID_LHS_TYPE) const uint LHS_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_GRAD_COMBINED) const bool COMBINED = false;
layout(constant_id = VKGMM_ID_GRAD_ACCUMULATE) const bool ACCUMULATE = false;
layout(constant_id = VKGMM_ID_GRAD_ACTIVATION) const uint ACTIVATION = VKGMM_ACT_NONE;
layout(constant_id = VKGMM_ID_VEC4) const bool VEC4 = false;
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
// Vector views of the same bindings (descriptor aliasing), read and written only with VEC4: four f32
// elements as a vec4 / uvec4, four 16-bit ones as a uvec2.
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_LHS) readonly buffer LhsV4 { uvec4 lhs_v4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_LHS) readonly buffer LhsV2 { uvec2 lhs_v2[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_D_OUT) readonly buffer DOutV4 { uvec4 d_out_v4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_D_OUT) readonly buffer DOutV2 { uvec2 d_out_v2[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_PRE) readonly buffer PreV4 { vec4 pre4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_D_H) writeonly buffer DhV4 { vec4 d_h4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_SORTED) writeonly buffer SortedV4 { vec4 sorted4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_GRAD_GATHERED) writeonly buffer GatheredV4 { vec4 gathered4[]; };

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

// Elements i .. i + 3 of a buffer of TYPE (i a multiple of 4), through its vector views.
#define VKGMM_GRAD_LOAD4(NAME, V4, V2, TYPE)                                                   \
  vec4 NAME(uint i) {                                                                          \
    if (TYPE == DT_F32) return uintBitsToFloat(V4[i >> 2]);                                    \
    uvec2 w = V2[i >> 2];                                                                      \
    return vec4(decode16(w.x & 0xffffu, TYPE), decode16(w.x >> 16, TYPE), decode16(w.y & 0xffffu, TYPE), \
                decode16(w.y >> 16, TYPE));                                                    \
  }
VKGMM_GRAD_LOAD4(load4_lhs, lhs_v4, lhs_v2, LHS_TYPE)
VKGMM_GRAD_LOAD4(load4_d_out, d_out_v4, d_out_v2, OUT_TYPE)

// Columns c .. c + 3 of a row (those below `end`; all 4 with VEC4): loads give 0 past the end, stores skip it.
vec4 d_out4(uint row, uint c, uint end) {
  if (VEC4) return load4_d_out(row + c);
  vec4 v;
  for (uint q = 0u; q < 4u; ++q) v[q] = c + q < end ? load_d_out(row + c + q) : 0.0;
  return v;
}
vec4 pre4_at(uint row, uint c, uint end) {
  if (VEC4) return pre4[(row + c) >> 2];
  vec4 v;
  for (uint q = 0u; q < 4u; ++q) v[q] = c + q < end ? pre[row + c + q] : 0.0;
  return v;
}
#define VKGMM_GRAD_STORE4(NAME, BUF, V4)       \
  void NAME(uint at, uint c, uint end, vec4 v) { \
    if (VEC4) {                                  \
      V4[at >> 2] = v;                           \
      return;                                    \
    }                                            \
    for (uint q = 0u; q < 4u; ++q)               \
      if (c + q < end) BUF[at + q] = v[q];       \
  }
VKGMM_GRAD_STORE4(store_d_h, d_h, d_h4)
VKGMM_GRAD_STORE4(store_sorted, sorted, sorted4)

#include "activation.glsl"

shared float dot_part[gl_WorkGroupSize.x];

void main() {
  const uint lid = local_index(), lanes = gl_WorkGroupSize.x;
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
      for (uint c = 4u * lid; c < pc.out_n; c += 4u * lanes) {
        const vec4 d = d_out4(dy_row, c, pc.out_n);
        if (GATED) {
          const vec4 g = pre4_at(pre_row, c, pc.out_n), u = pre4_at(pre_row + pc.out_n, c, pc.out_n);
          vec4 dg, du;
          for (uint q = 0u; q < 4u; ++q) {
            const vec2 dgu = gated_derivatives(g[q], u[q]) * (w * d[q]);
            dg[q] = dgu.x;
            du[q] = dgu.y;
            if (COMBINED) dot += d[q] * gated_value(g[q], u[q]);  // 0 past the row's end
          }
          store_d_h(h_row + c, c, pc.out_n, dg);
          store_d_h(h_row + pc.out_n + c, c, pc.out_n, du);
          store_sorted(sorted_row + c, c, pc.out_n, dg);
          store_sorted(sorted_row + pc.out_n + c, c, pc.out_n, du);
        } else {
          const vec4 h = pre4_at(pre_row, c, pc.out_n);
          if (COMBINED)
            for (uint q = 0u; q < 4u; ++q) dot += d[q] * h[q];
          store_d_h(h_row + c, c, pc.out_n, w * d);
          store_sorted(sorted_row + c, c, pc.out_n, w * d);
        }
      }
      const uint a_src = pc.lhs_off + (s / pc.lhs_div) * pc.k, a_dst = pc.a_off + r * pc.k;
      for (uint c = 4u * lid; c < pc.k; c += 4u * lanes) {
        if (VEC4) {
          gathered4[(a_dst + c) >> 2] = load4_lhs(a_src + c);
        } else {
          for (uint q = 0u; q < 4u; ++q)
            if (c + q < pc.k) gathered[a_dst + c + q] = load_lhs(a_src + c + q);
        }
      }
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
