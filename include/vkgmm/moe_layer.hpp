// The expert part of a Mixture-of-Experts layer as one plan: router matmul, top-k, the up projection
// ([gate | up] with bias and activation), the down projection combined in token order (with bias), and
// its backward (docs/routing-and-epilogues.md, "The MoE layer").
#pragma once

#include <memory>
#include <optional>

#include "vkgmm/context.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/top_k.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm {

// y [T, d] = sum over token t's top_k experts e (local ones: [expert_offset, expert_offset + E_local)) of
//   weights[t, j] * (act(x[t] @ w_up[e] + b_up[e]) @ w_down[e] + b_down[e]), + y's own values with
//   accumulate,
// with logits = x @ router_w (f32), ids and weights by top-k routing of the logits (TopKProblem's rules).
// Shapes: x [T, d]; router_w f32 [d, E]; w_up [E_local, d, n_up] with n_up = 2 f for a gated activation
// ([gate | up] columns), f otherwise; w_down [E_local, f, d]; b_up f32 [E_local, n_up]; b_down f32
// [E_local, d]. x and y have type `dtype`, the expert weights `weight_type`, w_down `down_weight_type`
// where given (GGUF files often keep the down projection in a wider format: q4_K gate and up beside q6_K
// down). A block format freezes a projection's weights: the backward gives no gradient of them, and they
// are in GGUF's layout, w_up [E_local, n_up, d], w_down [E_local, d, f]. With transpose_weights, float
// weights are in that layout too (GGUF's F32/F16/BF16 tensors, PyTorch's [out, in] Linear weights), and
// so are their gradients.
struct MoeLayerProblem {
  int64_t tokens = 0, d_model = 0, d_ff = 0;  // T, d, f
  int64_t num_experts = 0, top_k = 0;         // E (the router's), top_k
  int64_t expert_offset = 0;
  int64_t local_experts = -1;  // E_local; -1: E - expert_offset
  bool renormalize = true;
  bool transpose_weights = false;  // float w_up [E_local, n_up, d], w_down [E_local, d, f] (block formats always)
  Activation activation = Activation::swiglu;
  bool up_bias = false, down_bias = false;
  DType dtype = DType::f32, weight_type = DType::f32;
  std::optional<DType> down_weight_type;  // unset: weight_type
  DType down_type() const { return down_weight_type.value_or(weight_type); }  // w_down's type
  // Shards of the experts add their shares: y, and in the backward d_x and d_router_w, are added to
  // what their views hold.
  bool accumulate = false;
  // Inference: the plan records the forward only. It compiles no backward, its workspace holds no
  // gradient words and no saved pre-activations, and record_backward is refused.
  bool forward_only = false;
};

struct MoeLayerOperands {
  BufferView x, router_w, w_up, w_down, b_up, b_down;
  BufferView y;
  // workspace_bytes(): the router's logits, the ids and weights, the up projection's output and both
  // projections' pre-activations (saved for the backward, none with forward_only: record_backward reads
  // what the last record_forward into the same workspace wrote) and each pass's own words. Null: the plan's own (executions
  // of the plan that overlap in time then race; refused where ContextOptions::app_workspaces is set).
  BufferView workspace;
  // Optional uint32 word: the routing's device_status bits (0 for ids the top-k wrote), written by the
  // forward's routing build and again by the backward's first pass (bad_routing: the workspace's routing
  // words were rewritten between them).
  BufferView status;
};

// The cotangent d_y [T, d] (dtype) and the gradients: d_x [T, d] (dtype), d_router_w f32 [d, E],
// d_w_up and d_w_down as the weights (null for block-format weights), d_b_up and d_b_down f32 (with the
// biases). The forward's operands (x, router_w, w_up, w_down, biases, workspace) are read again.
struct MoeLayerGradients {
  BufferView d_y;
  BufferView d_x, d_router_w, d_w_up, d_b_up, d_w_down, d_b_down;
};

// The routed projection the plan runs for the up (gate | up, bias and activation, f32 out) or the down
// projection (the slots' f32 rows, combined in token order, bias): what the layer's weights must satisfy,
// as one gmm would (VKGMM_API: engines size and check their weights against it).
VKGMM_API GmmProblem moe_layer_projection(const MoeLayerProblem& p, bool up);

struct MoeLayerSizes {
  VkDeviceSize x = 0, router_w = 0, w_up = 0, w_down = 0, b_up = 0, b_down = 0, y = 0;  // and d_* alike
  VkDeviceSize workspace = 0;  // workspace_bytes()
};

class VKGMM_API MoeLayerPlan {
 public:
  MoeLayerPlan(Context& ctx, const MoeLayerProblem& problem);
  const MoeLayerProblem& problem() const;
  MoeLayerSizes sizes() const;  // byte sizes of each view (exactly; as OperandSizes')
  VkDeviceSize workspace_bytes() const;
  // The forward: router, top-k, both projections, with the barriers between them (none before the first
  // or after the last: the app orders the writes of x and the reads of y).
  void record_forward(VkCommandBuffer cb, const MoeLayerOperands& ops) const;
  // The backward of the last forward recorded into the same workspace, whose saved words it reads. It
  // starts with a compute barrier, so it may follow record_forward in one command buffer; the app orders
  // the writes of d_y before it and the reads of the gradients after it.
  void record_backward(VkCommandBuffer cb, const MoeLayerOperands& ops, const MoeLayerGradients& grads) const;

 private:
  struct VKGMM_HIDDEN State;
  std::shared_ptr<const State> state_;
};

}  // namespace vkgmm
