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
};

// Convenience: plan, record into a one-time command buffer, submit and wait.
VKGMM_API void top_k(Context& ctx, const TopKProblem& problem, const TopKOperands& ops);

}  // namespace vkgmm
