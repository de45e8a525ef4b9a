// TopKPlan: the problem's rules, one pipeline, and one dispatch over the tokens (shaders/topk.comp).
// Not a grouped op, so not a DispatchPlan: its record is one Stage, bound with the core's view checks.
#include "vkgmm/top_k.hpp"

#include <string>

#include "context_impl.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "tiling.hpp"
#include "top_k_common.hpp"

namespace vkgmm {

namespace {
constexpr const char* kOp = "top_k";
}  // namespace

struct TopKPlan::State {
  std::shared_ptr<Context::Impl> ctx;
  TopKProblem problem;
  TopKSizes sizes;
  TokenDispatch dispatch;
};

namespace {
// Loop iterations of one invocation (tiling.hpp, check_cpu_loop_budget), each loop's exit test one more
// (shaders/topk.comp): for each of its tokens the softmax's max and sum over the experts, a walk over the
// experts per chosen slot inside the slots' loop, and the weights' scaling over the slots.
uint64_t loop_iterations(const TopKProblem& p, uint64_t tokens) {
  const uint64_t e = uint64_t(p.experts), k = uint64_t(p.top_k);
  const uint64_t per_token = 2 * (e + 1) + (k + 1) + k * (e + 1) + (k + 1);
  return tokens * (per_token + 1) + 1;
}
}  // namespace

TopKPlan::TopKPlan(Context& ctx, const TopKProblem& p) {
  check_top_k_problem(kOp, p);
  auto st = std::make_shared<State>();
  st->ctx = ContextInternals::shared(ctx);
  st->problem = p;
  st->sizes.logits = operand_bytes(DType::f32, uint64_t(p.tokens * p.experts));
  st->sizes.ids = st->sizes.weights = operand_bytes(DType::f32, uint64_t(p.tokens * p.top_k));
  const DeviceInfo& info = st->ctx->dev.info;
  // An invocation reads each of its tokens' logits top_k + 2 times: no existing_out to split that over calls.
  check_cpu_loop_budget(info, kOp, loop_iterations(p, tokens_per_invocation(info, p.tokens)),
                        "top_k = " + std::to_string(p.top_k) + " over experts = " + std::to_string(p.experts),
                        "choose among fewer experts per call, or fewer of them per token");
  check_operand_limits(kOp, info, {{"logits", st->sizes.logits}, {"ids", st->sizes.ids}, {"weights", st->sizes.weights}});
  std::vector<uint32_t> constants(VKGMM_ID_TOPK_RENORMALIZE + 1, 0);
  constants[VKGMM_ID_TOPK_RENORMALIZE] = p.renormalize;
  st->dispatch = TokenDispatch(*st->ctx, p.tokens, topk_shader(), constants);
  state_ = std::move(st);
}

const TopKProblem& TopKPlan::problem() const { return state_->problem; }
TopKSizes TopKPlan::sizes() const { return state_->sizes; }

namespace {
// The dispatch for these views (its pipeline and grid the caller's).
Stage bind(const Context::Impl& ctx, const TopKProblem& p, const TopKOperands& ops) {
  // Each view inside its buffer first (bind_operand checks it again), then the overlaps between them.
  check_views_in_buffers(ctx, kOp, {{"logits", ops.logits}, {"ids", ops.ids}, {"weights", ops.weights}});
  check_no_overlap(kOp, ops.ids, {{"logits", ops.logits}, {"weights", ops.weights}}, "ids");
  check_no_overlap(kOp, ops.weights, {{"logits", ops.logits}}, "weights");
  const uint64_t slots = uint64_t(p.tokens * p.top_k);
  uint32_t off[3];
  Stage s = bind_token_operands(ctx, kOp,
                                {{"logits", ops.logits, uint64_t(p.tokens * p.experts), VKGMM_BINDING_TOPK_LOGITS},
                                 {"ids", ops.ids, slots, VKGMM_BINDING_TOPK_IDS},
                                 {"weights", ops.weights, slots, VKGMM_BINDING_TOPK_WEIGHTS}},
                                off);
  abi::TopKPush& push = s.push.start<abi::TopKPush>();
  push.logits_off = off[0];
  push.ids_off = off[1];
  push.weights_off = off[2];
  push.tokens = static_cast<uint32_t>(p.tokens);
  push.experts = static_cast<uint32_t>(p.experts);
  push.top_k = static_cast<uint32_t>(p.top_k);
  return s;
}
}  // namespace

void TopKPlan::check(const TopKOperands& ops) const { bind(*state_->ctx, state_->problem, ops); }

void TopKPlan::record(VkCommandBuffer cb, const TopKOperands& ops) const {
  if (cb == VK_NULL_HANDLE) refuse_top_k(kOp, "command buffer is VK_NULL_HANDLE");
  state_->dispatch.record(*state_->ctx, cb, bind(*state_->ctx, state_->problem, ops));
}

void top_k(Context& ctx, const TopKProblem& problem, const TopKOperands& ops) {
  TopKPlan plan(ctx, problem);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
