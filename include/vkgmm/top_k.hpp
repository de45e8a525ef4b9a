// Top-k routing: router logits in, the ids and weights gmm's routing reads out, on the device
// (docs/contract.md, "Top-k").
//
// The step between a MoE layer's router matmul and its expert matmuls (ggml's topk_moe does the same):
// with it, route -> up projection -> down projection is one command sequence with no host read.
#pragma once

#include <memory>

#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm {

// For each token t of logits [tokens, experts] (f32): ids[t, 0..top_k) the experts of the top_k highest
// logits, highest first (equal logits: the lower expert first; NaN ranks as -inf), and weights[t, j] =
// exp(l_j - max) / sum over all experts of exp(l_e - max): the softmax over the experts of the chosen
// logits. With renormalize, divided instead by the sum over the chosen top_k, so each token's weights
// add up to 1 (Mixtral, Qwen3's norm_topk_prob; the same as a softmax over the top_k logits alone).
// Without it, the full softmax's values (DeepSeek-V2's norm_topk_prob false).
struct TopKProblem {
  // One invocation per token reads its logits top_k + 2 times: these bounds keep any problem's work per
  // invocation far from what makes a GPU reset a busy queue (routers run up to a few hundred experts,
  // top-8 or so).
  static constexpr int64_t max_experts = 65536;
  static constexpr int64_t max_top_k = 64;
  int64_t tokens = 0;   // T; 0: nothing to record (the views are still checked)
  int64_t experts = 0;  // 1 <= E <= max_experts
  int64_t top_k = 0;    // 1 <= top_k <= min(E, max_top_k)
  bool renormalize = true;
};

// logits: f32 [tokens, experts]; ids: int32 [tokens, top_k]; weights: f32 [tokens, top_k] (the views
// GmmOperands::ids and ::weights then take). ids and weights may not overlap logits or each other.
struct TopKOperands {
  BufferView logits, ids, weights;
};

struct TopKSizes {
  VkDeviceSize logits = 0, ids = 0, weights = 0;
};

// Plan, then record (as GmmPlan): one dispatch, no barrier of its own. The app orders it after the
// commands that write logits and before those that read ids and weights (shader write -> shader read).
class VKGMM_API TopKPlan {
 public:
  TopKPlan(Context& ctx, const TopKProblem& problem);
  const TopKProblem& problem() const;
  TopKSizes sizes() const;
  // Throws what record() would throw for these operands, recording nothing.
  void check(const TopKOperands& ops) const;
  void record(VkCommandBuffer cb, const TopKOperands& ops) const;

 private:
  struct VKGMM_HIDDEN State;  // the library's, exported with nothing
  std::shared_ptr<const State> state_;
  friend struct PlanInternals;  // the library's own tools (host/plan_internals.hpp)
};

// Convenience: plan, record into a one-time command buffer, submit and wait.
VKGMM_API void top_k(Context& ctx, const TopKProblem& problem, const TopKOperands& ops);

// ----- the backward: the gradient of the weights to the router logits ----------------------------------
//
// Given the forward's ids and weights and d_weights [tokens, top_k] (f32, the gradient of the loss to the
// weights: the routed gmm backward's d_weights), d_logits [tokens, experts] (f32), with s = sum over the
// token's slots j of d_weights[j] * weights[j]:
// - renormalize (weights the softmax over the chosen logits): d_logits[e] = sum over the slots j with
//   ids[j] = e of weights[j] * (d_weights[j] - s); 0 for an expert no slot chose;
// - otherwise (weights the softmax p over all experts): d_logits[e] = p[e] * (g[e] - s), g[e] the sum of
//   d_weights[j] over the slots with ids[j] = e (0 for the others), p recomputed from the logits as the
//   forward does (a NaN logit is -inf: p = 0, so its gradient is 0).
// A slot whose id is outside [0, experts) (-1, or a value the app wrote) takes no part: it is skipped,
// never used as an index, and flagged nowhere. An expert two slots name gets both terms.
struct TopKBackwardOptions {
  // d_logits += the gradient instead of =: the logits' gradient from other terms (an auxiliary
  // load-balancing loss, a z-loss) sums in place.
  bool accumulate = false;
};

// logits f32 [tokens, experts]; ids int32, weights and d_weights f32 [tokens, top_k]: what the forward
// read and wrote, and the weights' gradient. d_logits f32 [tokens, experts] may not overlap any of them;
// the inputs may overlap each other.
struct TopKBackwardOperands {
  BufferView logits, ids, weights, d_weights, d_logits;
};

struct TopKBackwardSizes {
  VkDeviceSize logits = 0, ids = 0, weights = 0, d_weights = 0, d_logits = 0;
};

// Planned from the forward's problem (its rules, refused the same way); one dispatch, no barrier of its
// own: the app orders it after the commands that write its inputs and before those that read d_logits.
class VKGMM_API TopKBackwardPlan {
 public:
  TopKBackwardPlan(Context& ctx, const TopKProblem& forward, const TopKBackwardOptions& options = {});
  const TopKProblem& problem() const;
  const TopKBackwardOptions& options() const;
  TopKBackwardSizes sizes() const;
  // Throws what record() would throw for these operands, recording nothing.
  void check(const TopKBackwardOperands& ops) const;
  void record(VkCommandBuffer cb, const TopKBackwardOperands& ops) const;

 private:
  struct VKGMM_HIDDEN State;  // the library's, exported with nothing
  std::shared_ptr<const State> state_;
  friend struct PlanInternals;  // the library's own tools (host/plan_internals.hpp)
};

// Convenience: plan, record into a one-time command buffer, submit and wait.
VKGMM_API void top_k_backward(Context& ctx, const TopKProblem& forward, const TopKBackwardOperands& ops,
                              const TopKBackwardOptions& options = {});

}  // namespace vkgmm
