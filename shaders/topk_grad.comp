#version 450
// The gradient of top-k routing to the router logits (VKGMM_TOPK_GRAD_PUSH in interface.h): given the
// forward's ids and weights and d_weights, each token's d_logits [E], every word written once.
//
// One invocation per token walks its experts in ascending order. The next expert that some slot names
// (the lowest valid id above the last) is found while the previous one's slots are summed, so one pass
// over the top_k slots per distinct expert: E + top_k^2 steps, no per-token array, and an expert that
// (hostile) ids name twice gets both slots' terms. The walk is one flat loop rather than a scan loop
// inside a branch: a CPU driver runs branches by masking its SIMD group's invocations, so such a loop
// would run (and count against its loop budget, tiling.hpp) for each expert any of them has chosen.
// Ids outside [0, experts) (-1: none) never match an expert: skipped, never used as an index.
#extension GL_GOOGLE_include_directive : require

#include "interface.h"

layout(local_size_x = VKGMM_TOPK_INVOCATIONS) in;
layout(constant_id = VKGMM_ID_TOPK_RENORMALIZE) const bool RENORMALIZE = true;
layout(constant_id = VKGMM_ID_TOPK_GRAD_ACCUMULATE) const bool ACCUMULATE = false;

layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_GRAD_LOGITS) readonly buffer LogitsBuf { float logits[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_GRAD_IDS) readonly buffer IdsBuf { int ids[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_GRAD_WEIGHTS) readonly buffer WeightsBuf { float weights[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_GRAD_D_WEIGHTS) readonly buffer DWeightsBuf { float d_weights[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_GRAD_D_LOGITS) buffer DLogitsBuf { float d_logits[]; };

layout(push_constant) uniform Params { VKGMM_TOPK_GRAD_PUSH(VKGMM_PUSH_FIELD) } pc;

#include "softmax.glsl"

void main() {
  const int experts = int(pc.experts);
  // Tokens past the grid's workgroups (maxComputeWorkGroupCount[0] x 64) are strided over.
  for (uint t = gl_GlobalInvocationID.x; t < pc.tokens; t += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    uint slots = t * pc.top_k;
    // s = sum of d_w * w over the valid slots, and the lowest valid id (experts: none).
    float s = 0.0;
    int cur = experts;
    for (uint j = 0u; j < pc.top_k; ++j) {
      int id = ids[pc.ids_off + slots + j];
      if (id < 0 || id >= experts) continue;
      s += d_weights[pc.d_weights_off + slots + j] * weights[pc.weights_off + slots + j];
      cur = min(cur, id);
    }
    uint base = pc.logits_off + t * pc.experts;
    float top = 0.0, inv_total = 0.0;
    if (!RENORMALIZE) {
      float total;
      softmax_max_sum(base, pc.experts, top, total);
      inv_total = 1.0 / total;  // as topk.comp scales: p_e is the very weight it writes
    }

    uint out_base = pc.d_logits_off + t * pc.experts;
    uint e = 0u, j = 0u;
    // Expert cur's slots: renormalized, the sum of their w_j * (d_w_j - s); else g_e, that of their d_w_j.
    float chosen = 0.0;
    int following = experts;  // the lowest id above cur seen so far
    while (e < pc.experts) {
      if (int(e) == cur && j < pc.top_k) {
        // One slot of expert e's scan.
        int id = ids[pc.ids_off + slots + j];
        if (id == cur) {
          float dw = d_weights[pc.d_weights_off + slots + j];
          chosen += RENORMALIZE ? weights[pc.weights_off + slots + j] * (dw - s) : dw;
        } else if (id > cur && id < following) {
          following = id;
        }
        ++j;
      } else {
        float d = RENORMALIZE ? chosen : term(logit(base, e), top) * inv_total * (chosen - s);
        d_logits[out_base + e] = ACCUMULATE ? d_logits[out_base + e] + d : d;
        if (int(e) == cur) {
          cur = following;
          following = experts;
          j = 0u;
        }
        chosen = 0.0;
        ++e;
      }
    }
  }
}
