// TopKBackwardPlan: the forward's rules, one pipeline, one dispatch over the tokens
// (shaders/topk_grad.comp), bound as TopKPlan binds its own.
#include "vkgmm/top_k.hpp"

#include <algorithm>
#include <string>

#include "context_impl.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "tiling.hpp"
#include "top_k_common.hpp"

namespace vkgmm {

namespace {
constexpr const char* kOp = "top_k_backward";

// Loop iterations of one invocation (tiling.hpp, check_cpu_loop_budget), each loop's exit test one more:
// for each of its tokens, its slots once, the softmax's max and sum without renormalize, then the walk over
// the experts with one scan of the slots per distinct expert they name.
uint64_t loop_iterations(const TopKProblem& p, uint64_t tokens) {
  const uint64_t e = uint64_t(p.experts), k = uint64_t(p.top_k);
  const uint64_t per_token = (k + 1) + (p.renormalize ? 0 : 2 * (e + 1)) + (e + k * std::min(k, e) + 1);
  return tokens * (per_token + 1) + 1;
}
}  // namespace

struct TopKBackwardPlan::State {
  std::shared_ptr<Context::Impl> ctx;
  TopKProblem problem;
  TopKBackwardOptions options;
  TopKBackwardSizes sizes;
  TokenDispatch dispatch;
};

TopKBackwardPlan::TopKBackwardPlan(Context& ctx, const TopKProblem& p, const TopKBackwardOptions& options) {
  check_top_k_problem(kOp, p);
  auto st = std::make_shared<State>();
  st->ctx = ContextInternals::shared(ctx);
  st->problem = p;
  st->options = options;
  TopKBackwardSizes& sz = st->sizes;
  sz.logits = sz.d_logits = operand_bytes(DType::f32, uint64_t(p.tokens * p.experts));
  sz.ids = sz.weights = sz.d_weights = operand_bytes(DType::f32, uint64_t(p.tokens * p.top_k));
  const DeviceInfo& info = st->ctx->dev.info;
  check_cpu_loop_budget(info, kOp, loop_iterations(p, tokens_per_invocation(info, p.tokens)),
                        "top_k = " + std::to_string(p.top_k) + " over experts = " + std::to_string(p.experts),
                        "differentiate over fewer experts per call, or fewer of them per token");
  check_operand_limits(kOp, info,
                       {{"logits", sz.logits}, {"ids", sz.ids}, {"weights", sz.weights}, {"d_weights", sz.d_weights},
                        {"d_logits", sz.d_logits}});
  std::vector<uint32_t> constants(VKGMM_ID_TOPK_GRAD_ACCUMULATE + 1, 0);
  constants[VKGMM_ID_TOPK_RENORMALIZE] = p.renormalize;
  constants[VKGMM_ID_TOPK_GRAD_ACCUMULATE] = options.accumulate;
  st->dispatch = TokenDispatch(*st->ctx, p.tokens, topk_grad_shader(), constants);
  state_ = std::move(st);
}

const TopKProblem& TopKBackwardPlan::problem() const { return state_->problem; }
const TopKBackwardOptions& TopKBackwardPlan::options() const { return state_->options; }
TopKBackwardSizes TopKBackwardPlan::sizes() const { return state_->sizes; }

namespace {
// The dispatch for these views (its pipeline and grid the caller's).
Stage bind(const Context::Impl& ctx, const TopKProblem& p, const TopKBackwardOperands& ops) {
  check_views_in_buffers(ctx, kOp,
                         {{"logits", ops.logits}, {"ids", ops.ids}, {"weights", ops.weights},
                          {"d_weights", ops.d_weights}, {"d_logits", ops.d_logits}});
  // The inputs are only read: they may share words. The output may share none with them.
  check_no_overlap(kOp, ops.d_logits,
                   {{"logits", ops.logits}, {"ids", ops.ids}, {"weights", ops.weights}, {"d_weights", ops.d_weights}},
                   "d_logits");
  const uint64_t slots = uint64_t(p.tokens * p.top_k), elements = uint64_t(p.tokens * p.experts);
  uint32_t off[5];
  Stage s = bind_token_operands(ctx, kOp,
                                {{"logits", ops.logits, elements, VKGMM_BINDING_TOPK_GRAD_LOGITS},
                                 {"ids", ops.ids, slots, VKGMM_BINDING_TOPK_GRAD_IDS},
                                 {"weights", ops.weights, slots, VKGMM_BINDING_TOPK_GRAD_WEIGHTS},
                                 {"d_weights", ops.d_weights, slots, VKGMM_BINDING_TOPK_GRAD_D_WEIGHTS},
                                 {"d_logits", ops.d_logits, elements, VKGMM_BINDING_TOPK_GRAD_D_LOGITS}},
                                off);
  abi::TopKGradPush& push = s.push.start<abi::TopKGradPush>();
  push.logits_off = off[0];
  push.ids_off = off[1];
  push.weights_off = off[2];
  push.d_weights_off = off[3];
  push.d_logits_off = off[4];
  push.tokens = static_cast<uint32_t>(p.tokens);
  push.experts = static_cast<uint32_t>(p.experts);
  push.top_k = static_cast<uint32_t>(p.top_k);
  return s;
}
}  // namespace

void TopKBackwardPlan::check(const TopKBackwardOperands& ops) const { bind(*state_->ctx, state_->problem, ops); }

void TopKBackwardPlan::record(VkCommandBuffer cb, const TopKBackwardOperands& ops) const {
  if (cb == VK_NULL_HANDLE) refuse_top_k(kOp, "command buffer is VK_NULL_HANDLE");
  state_->dispatch.record(*state_->ctx, cb, bind(*state_->ctx, state_->problem, ops));
}

void top_k_backward(Context& ctx, const TopKProblem& forward, const TopKBackwardOperands& ops,
                    const TopKBackwardOptions& options) {
  TopKBackwardPlan plan(ctx, forward, options);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
