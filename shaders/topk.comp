#version 450
// Top-k routing of router logits (VKGMM_TOPK_PUSH in interface.h): each token's top_k experts and their
// softmax weights, written as gmm's routing reads them (ids [T, top_k] int32, weights [T, top_k] f32).
// One invocation per token walks its E logits k + 2 times (max, softmax sum, then one pass per pick):
// O(k * E) reads (the host bounds both: TopKProblem::max_experts, max_top_k) and no per-token array; the
// picks are exact: each pass takes the best logit strictly after the previous pick in the order (logit
// descending, expert ascending).
#extension GL_GOOGLE_include_directive : require

#include "interface.h"

layout(local_size_x = VKGMM_TOPK_INVOCATIONS) in;
layout(constant_id = VKGMM_ID_TOPK_RENORMALIZE) const bool RENORMALIZE = true;

layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_LOGITS) readonly buffer LogitsBuf { float logits[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_IDS) writeonly buffer IdsBuf { int ids[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_TOPK_WEIGHTS) buffer WeightsBuf { float weights[]; };

layout(push_constant) uniform Params { VKGMM_TOPK_PUSH(VKGMM_PUSH_FIELD) } pc;

#include "softmax.glsl"

void main() {
  // Tokens past the grid's workgroups (maxComputeWorkGroupCount[0] x 64) are strided over.
  for (uint t = gl_GlobalInvocationID.x; t < pc.tokens; t += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    uint base = pc.logits_off + t * pc.experts;
    float top, total;
    softmax_max_sum(base, pc.experts, top, total);

    uint out_base = t * pc.top_k;
    float prev_v = -NEG_INF;  // +inf, with prev_e = -1: before every expert
    int prev_e = -1;
    float chosen = 0.0;
    for (uint j = 0u; j < pc.top_k; ++j) {
      int best = -1;
      float best_v = NEG_INF;
      for (uint e = 0u; e < pc.experts; ++e) {
        float v = logit(base, e);
        bool after_prev = v < prev_v || (v == prev_v && int(e) > prev_e);
        // Ascending e with a strict comparison keeps the lower expert on equal logits.
        if (after_prev && (best < 0 || v > best_v)) {
          best = int(e);
          best_v = v;
        }
      }
      prev_v = best_v;
      prev_e = best;
      float w = term(best_v, top);
      chosen += w;
      ids[pc.ids_off + out_base + j] = best;
      weights[pc.weights_off + out_base + j] = w;
    }
    // Written once more, now that the sum is known: one invocation owns these words, no barrier needed.
    float scale = RENORMALIZE ? 1.0 / chosen : 1.0 / total;
    for (uint j = 0u; j < pc.top_k; ++j) weights[pc.weights_off + out_base + j] *= scale;
  }
}
