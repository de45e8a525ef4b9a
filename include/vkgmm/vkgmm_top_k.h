/* vkgmm C API: top-k routing of router logits and its backward (vkgmm::TopKPlan, vkgmm::TopKBackwardPlan,
 * vkgmm/top_k.hpp). Included by vkgmm.h. */
#ifndef VKGMM_TOP_K_H_
#define VKGMM_TOP_K_H_

#include "vkgmm/vkgmm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vkgmm_top_k_plan vkgmm_top_k_plan;
typedef struct vkgmm_top_k_backward_plan vkgmm_top_k_backward_plan;

/* Top-k routing of router logits (vkgmm::TopKPlan, vkgmm/top_k.hpp): for each of `tokens` rows of logits
 * [tokens, experts] (f32), ids [tokens, top_k] (int32) the top_k experts by logit, highest first (equal
 * logits: the lower expert first; NaN ranks as -inf), and weights [tokens, top_k] (f32) their softmax over
 * all experts, with renormalize divided by their sum over the top_k. One dispatch, no barrier of its own:
 * the app orders it after the writes of logits and before the routed gmm that reads ids and weights. */
typedef struct vkgmm_top_k_problem {
  size_t struct_size;
  int64_t tokens, experts, top_k;
  int renormalize;       /* 0: on (C++'s default); 1 on; -1 off */
  int32_t reserved_tail; /* must be 0: no struct ends in padding */
} vkgmm_top_k_problem;
typedef struct vkgmm_top_k_operands {
  size_t struct_size;
  vkgmm_buffer_view logits, ids, weights;
} vkgmm_top_k_operands;
typedef struct vkgmm_top_k_sizes {
  size_t struct_size; /* set by the caller; vkgmm fills the rest */
  VkDeviceSize logits, ids, weights;
} vkgmm_top_k_sizes;

VKGMM_API vkgmm_status vkgmm_top_k_plan_create(vkgmm_context* ctx, const vkgmm_top_k_problem* problem,
                                               vkgmm_top_k_plan** out);
VKGMM_API void vkgmm_top_k_plan_destroy(vkgmm_top_k_plan* plan);
VKGMM_API vkgmm_status vkgmm_top_k_plan_sizes(const vkgmm_top_k_plan* plan, vkgmm_top_k_sizes* out);
VKGMM_API vkgmm_status vkgmm_top_k_plan_record(const vkgmm_top_k_plan* plan, VkCommandBuffer cmd,
                                               const vkgmm_top_k_operands* ops);
VKGMM_API vkgmm_status vkgmm_top_k_plan_run(vkgmm_context* ctx, const vkgmm_top_k_plan* plan,
                                            const vkgmm_top_k_operands* ops);

/* Its backward (vkgmm::TopKBackwardPlan): the gradient of the weights to the logits. Given the forward's
 * logits, ids and weights and d_weights [tokens, top_k] (f32), d_logits [tokens, experts] (f32), with
 * s = sum over a token's slots of d_weights * weights: renormalized, d_logits[e] = sum over the slots
 * choosing e of weights * (d_weights - s), 0 for the others; otherwise p[e] * (g[e] - s), p the softmax
 * over all experts recomputed from the logits, g[e] the d_weights of the slots choosing e (else 0). Ids
 * outside [0, experts) are skipped (nothing flags them). d_logits may not overlap the inputs. One
 * dispatch, no barrier of its own. */
typedef struct vkgmm_top_k_backward_options {
  size_t struct_size;
  int accumulate;   /* d_logits += the gradient instead of = */
  int32_t reserved; /* must be 0: no struct ends in padding */
} vkgmm_top_k_backward_options;
typedef struct vkgmm_top_k_backward_operands {
  size_t struct_size;
  vkgmm_buffer_view logits, ids, weights, d_weights, d_logits;
} vkgmm_top_k_backward_operands;
typedef struct vkgmm_top_k_backward_sizes {
  size_t struct_size; /* set by the caller; vkgmm fills the rest */
  VkDeviceSize logits, ids, weights, d_weights, d_logits;
} vkgmm_top_k_backward_sizes;

/* forward: the forward's problem; options may be NULL (all defaults). */
VKGMM_API vkgmm_status vkgmm_top_k_backward_plan_create(vkgmm_context* ctx, const vkgmm_top_k_problem* forward,
                                                        const vkgmm_top_k_backward_options* options,
                                                        vkgmm_top_k_backward_plan** out);
VKGMM_API void vkgmm_top_k_backward_plan_destroy(vkgmm_top_k_backward_plan* plan);
VKGMM_API vkgmm_status vkgmm_top_k_backward_plan_sizes(const vkgmm_top_k_backward_plan* plan,
                                                       vkgmm_top_k_backward_sizes* out);
VKGMM_API vkgmm_status vkgmm_top_k_backward_plan_record(const vkgmm_top_k_backward_plan* plan, VkCommandBuffer cmd,
                                                        const vkgmm_top_k_backward_operands* ops);
VKGMM_API vkgmm_status vkgmm_top_k_backward_plan_run(vkgmm_context* ctx, const vkgmm_top_k_backward_plan* plan,
                                                     const vkgmm_top_k_backward_operands* ops);

#ifdef __cplusplus
}
#endif

#endif /* VKGMM_TOP_K_H_ */
