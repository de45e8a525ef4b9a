#version 450
// The ordered combine of routed slots (VKGMM_COMBINE_PUSH): each token's output is the sum of its slots'
// fp32 results in slot order (j ascending), + existing_out, rounded once to the output type. A fixed
// order and one owner per output element, no float atomics: the same inputs give the same bits on every
// run. Slots of no local expert hold 0 (the gmm kernel's fill), which leaves the sum unchanged.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "bindings.glsl"
#include "dtype.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;
layout(constant_id = VKGMM_ID_OUT_TYPE) const uint OUT_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_HAS_EXISTING) const bool HAS_EXISTING = false;
// The rows from the metadata build's split list (interface.h, VKGMM_ID_COMBINE_LISTED).
layout(constant_id = VKGMM_ID_COMBINE_LISTED) const bool LISTED = false;

// lhs_off: the per-slot results [T * top_k, out_n] (f32, at VKGMM_BINDING_LHS); out and existing_out
// [T, out_n] of OUT_TYPE. With LISTED a split reduction's chunks: see interface.h.
layout(push_constant) uniform Params { VKGMM_COMBINE_PUSH(VKGMM_PUSH_FIELD) } pc;

VKGMM_DEFINE_LOAD(load_ex, ex, OUT_TYPE)
#define VKGMM_PARTIAL_WORD(i) lhs_word(pc.lhs_off + (i))
#define VKGMM_PARTIAL_WORD4(i) lhs_v4[pc.lhs_off / 4u + (i)]
#include "combine.glsl"

void main() {
  // Tokens past 65535 are folded into the z dimension of the grid.
  uint t = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (t >= pc.tokens) return;
  // Output row t's sum of its top_k slots, or with LISTED entry t of the list: its output row and its
  // chunks' slots, each checked against the plan's bounds (the build writes them within those; a
  // workspace rewritten meanwhile must not send a write past out).
  uint row = t, slot = t * pc.top_k, slots = pc.top_k;
  if (LISTED) {
    const uint chunks = lhs_word(pc.list_off), count = lhs_word(pc.list_off + 1u);
    if (t >= count || chunks == 0u || chunks > pc.top_k || t >= pc.top_k / chunks) return;
    row = lhs_word(pc.list_off + VKGMM_SPLIT_LIST_HEAD + t);
    if (row >= pc.out_rows) return;
    slot = t * chunks;
    slots = chunks;
  }
  // Columns past the grid's (maxComputeWorkGroupCount[0] workgroups of 64) are strided over.
  for (uint col = gl_GlobalInvocationID.x; col < pc.out_n; col += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
    combine_row_element(row, slot, col, slots, pc.out_n);
}
