#version 450
// Bench only (the unfused chain baseline), step (b): the permutation dispatch. Row i of the permuted
// activations is token perm[i] / top_k's row: dst[i] = lhs[perm[i] / top_k], rows of `row_words` 32-bit
// words (any element type: whole words are copied). Invocation x copies word x of row y (+ z folds rows
// past the y limit).
#extension GL_GOOGLE_include_directive : require
#include "../../shaders/interface.h"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer LhsBuf { uint lhs[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) writeonly buffer DstBuf { uint dst[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META) readonly buffer WorkBuf { int work[]; };

layout(push_constant) uniform Params { uint rows, row_words, top_k, perm_off; } pc;

void main() {
  const uint row = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  const uint w = gl_GlobalInvocationID.x;
  if (row >= pc.rows || w >= pc.row_words) return;
  const uint token = uint(work[pc.perm_off + row]) / pc.top_k;
  dst[row * pc.row_words + w] = lhs[token * pc.row_words + w];
}
