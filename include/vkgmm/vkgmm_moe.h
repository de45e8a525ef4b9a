/* vkgmm C API: the expert part of an MoE layer as one plan (vkgmm::MoeLayerPlan, vkgmm/moe_layer.hpp,
 * which says what each field and view holds). Included by vkgmm.h. */
#ifndef VKGMM_MOE_H_
#define VKGMM_MOE_H_

#include "vkgmm/vkgmm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vkgmm_moe_layer_plan vkgmm_moe_layer_plan;

/* local_experts 0 or -1: num_experts - expert_offset. renormalize 0: on (C++'s default); 1 on; -1 off.
 * activation is taken as given: 0 is VKGMM_ACTIVATION_NONE, where C++'s default is swiglu. w_down's type
 * is down_weight_type where has_down_weight_type is nonzero, else weight_type. Block-format weights are frozen, in GGUF's layout
 * (w_up [E_local, n_up, d], w_down [E_local, d, f]); their gradient views stay zero. */
typedef struct vkgmm_moe_layer_problem {
  size_t struct_size;
  int64_t tokens, d_model, d_ff, num_experts, top_k, expert_offset, local_experts;
  int32_t renormalize;
  vkgmm_activation activation;
  int32_t up_bias, down_bias;
  vkgmm_dtype dtype, weight_type;
  int32_t accumulate;    /* shards add their shares of y, d_x and d_router_w */
  int32_t reserved_tail; /* must be 0 */
  int32_t has_down_weight_type;
  vkgmm_dtype down_weight_type;
  int32_t transpose_weights; /* float w_up [E_local, n_up, d], w_down [E_local, d, f], as block formats */
  int32_t forward_only;      /* the forward alone: no backward compiled, record_backward refused */
} vkgmm_moe_layer_problem;

/* workspace: a zero view takes the plan's own (executions that overlap in time then race); on a context
 * with app_workspaces it is VKGMM_INVALID_ARGUMENT. */
typedef struct vkgmm_moe_layer_operands {
  size_t struct_size;
  vkgmm_buffer_view x, router_w, w_up, w_down, b_up, b_down, y, workspace, status;
} vkgmm_moe_layer_operands;
typedef struct vkgmm_moe_layer_gradients {
  size_t struct_size;
  vkgmm_buffer_view d_y, d_x, d_router_w, d_w_up, d_b_up, d_w_down, d_b_down;
} vkgmm_moe_layer_gradients;
typedef struct vkgmm_moe_layer_sizes {
  size_t struct_size; /* set by the caller; vkgmm fills the rest */
  VkDeviceSize x, router_w, w_up, w_down, b_up, b_down, y, workspace;
} vkgmm_moe_layer_sizes;

VKGMM_API vkgmm_status vkgmm_moe_layer_plan_create(vkgmm_context* ctx, const vkgmm_moe_layer_problem* problem,
                                                   vkgmm_moe_layer_plan** out);
VKGMM_API void vkgmm_moe_layer_plan_destroy(vkgmm_moe_layer_plan* plan);
VKGMM_API vkgmm_status vkgmm_moe_layer_plan_sizes(const vkgmm_moe_layer_plan* plan, vkgmm_moe_layer_sizes* out);
VKGMM_API vkgmm_status vkgmm_moe_layer_plan_record_forward(const vkgmm_moe_layer_plan* plan, VkCommandBuffer cmd,
                                                           const vkgmm_moe_layer_operands* ops);
VKGMM_API vkgmm_status vkgmm_moe_layer_plan_record_backward(const vkgmm_moe_layer_plan* plan, VkCommandBuffer cmd,
                                                            const vkgmm_moe_layer_operands* ops,
                                                            const vkgmm_moe_layer_gradients* grads);
/* The forward and, with grads non-NULL, the backward in one command buffer; submit and wait. */
VKGMM_API vkgmm_status vkgmm_moe_layer_plan_run(vkgmm_context* ctx, const vkgmm_moe_layer_plan* plan,
                                                const vkgmm_moe_layer_operands* ops,
                                                const vkgmm_moe_layer_gradients* grads);

#ifdef __cplusplus
}
#endif

#endif /* VKGMM_MOE_H_ */
