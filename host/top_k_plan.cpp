// TopKPlan: the problem's rules, one pipeline, and one dispatch over the tokens (shaders/topk.comp).
// Not a grouped op, so not a DispatchPlan: its record is one Stage, bound with the core's view checks.
#include "vkgmm/top_k.hpp"

#include <algorithm>
#include <string>

#include "context_impl.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "shader_modules.hpp"
#include "stage.hpp"
#include "tiling.hpp"

namespace vkgmm {

namespace {
constexpr const char* kOp = "top_k";

[[noreturn]] void refuse(const std::string& what) { throw Error(Status::invalid_argument, std::string(kOp) + ": " + what); }

void check_problem(const TopKProblem& p) {
  if (p.tokens < 0) refuse("tokens: " + std::to_string(p.tokens) + " is negative");
  if (p.experts < 1) refuse("experts: " + std::to_string(p.experts) + " must be at least 1");
  if (p.top_k < 1 || p.top_k > p.experts)
    refuse("top_k: " + std::to_string(p.top_k) + " must be in [1, experts = " + std::to_string(p.experts) + "]");
  // One invocation reads a token's logits top_k + 2 times: bounded, so that no problem keeps a GPU busy
  // long enough to be reset (the largest routers run 256 experts, top-8 or so).
  if (p.experts > TopKProblem::max_experts)
    refuse("experts: " + std::to_string(p.experts) + " is more than top_k routing takes (" +
           std::to_string(TopKProblem::max_experts) + ")");
  if (p.top_k > TopKProblem::max_top_k)
    refuse("top_k: " + std::to_string(p.top_k) + " is more than top_k routing takes (" + std::to_string(TopKProblem::max_top_k) + ")");
  // The shader indexes words with 32-bit integers; one binding addresses less anyway.
  constexpr int64_t kWords = int64_t(1) << 32;
  if (p.tokens > 0 && (p.experts >= kWords / p.tokens))
    refuse("logits: tokens * experts = " + std::to_string(p.tokens) + " * " + std::to_string(p.experts) +
           " elements is more than 32-bit indexing reaches");
}
}  // namespace

struct TopKPlan::State {
  std::shared_ptr<Context::Impl> ctx;
  TopKProblem problem;
  TopKSizes sizes;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t groups = 0;  // workgroups of the grid (0: nothing to record)
};

TopKPlan::TopKPlan(Context& ctx, const TopKProblem& p) {
  check_problem(p);
  auto st = std::make_shared<State>();
  st->ctx = ContextInternals::shared(ctx);
  st->problem = p;
  st->sizes.logits = operand_bytes(DType::f32, uint64_t(p.tokens * p.experts));
  st->sizes.ids = st->sizes.weights = operand_bytes(DType::f32, uint64_t(p.tokens * p.top_k));
  const DeviceInfo& info = st->ctx->dev.info;
  // An invocation reads its token's logits top_k + 2 times: no existing_out to split that over calls.
  check_cpu_loop_budget(info, kOp, uint64_t(p.top_k + 2) * uint64_t(p.experts) + 1,
                        "top_k = " + std::to_string(p.top_k) + " over experts = " + std::to_string(p.experts),
                        "choose among fewer experts per call, or fewer of them per token");
  check_operand_limits(kOp, info, {{"logits", st->sizes.logits}, {"ids", st->sizes.ids}, {"weights", st->sizes.weights}});
  if (p.tokens > 0) {
    const uint64_t needed = (uint64_t(p.tokens) + VKGMM_TOPK_INVOCATIONS - 1) / VKGMM_TOPK_INVOCATIONS;
    st->groups = static_cast<uint32_t>(std::min<uint64_t>(needed, info.max_workgroup_count[0]));
    std::vector<uint32_t> constants(VKGMM_ID_TOPK_RENORMALIZE + 1, 0);
    constants[VKGMM_ID_TOPK_RENORMALIZE] = p.renormalize;
    const ShaderCode code = topk_shader();
    st->pipeline = st->ctx->pipeline(code.code, code.words, constants);
    st->ctx->log.throw_if_any();
  }
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
  // int32 ids take f32's checks: 4-byte elements.
  const BoundOperand logits = bind_operand(ctx, kOp, "logits", ops.logits, DType::f32, uint64_t(p.tokens * p.experts), 0, false);
  const BoundOperand ids = bind_operand(ctx, kOp, "ids", ops.ids, DType::f32, slots, 0, false);
  const BoundOperand weights = bind_operand(ctx, kOp, "weights", ops.weights, DType::f32, slots, 0, false);
  ctx.dev.options.check_records(kOp);
  Stage s;
  s.bind_all(logits.info);  // bindings the module does not declare
  s.infos[VKGMM_BINDING_TOPK_LOGITS] = logits.info;
  s.infos[VKGMM_BINDING_TOPK_IDS] = ids.info;
  s.infos[VKGMM_BINDING_TOPK_WEIGHTS] = weights.info;
  abi::TopKPush& push = s.push.start<abi::TopKPush>();
  push.logits_off = logits.element_offset;
  push.ids_off = ids.element_offset;
  push.weights_off = weights.element_offset;
  push.tokens = static_cast<uint32_t>(p.tokens);
  push.experts = static_cast<uint32_t>(p.experts);
  push.top_k = static_cast<uint32_t>(p.top_k);
  return s;
}
}  // namespace

void TopKPlan::check(const TopKOperands& ops) const { bind(*state_->ctx, state_->problem, ops); }

void TopKPlan::record(VkCommandBuffer cb, const TopKOperands& ops) const {
  if (cb == VK_NULL_HANDLE) refuse("command buffer is VK_NULL_HANDLE");
  Stage s = bind(*state_->ctx, state_->problem, ops);
  if (!state_->groups) return;  // no tokens: the views checked, nothing to run
  s.pipeline = state_->pipeline;
  s.grid[0] = state_->groups;
  s.grid[1] = s.grid[2] = 1;
  s.record(*state_->ctx, cb);
}

void top_k(Context& ctx, const TopKProblem& problem, const TopKOperands& ops) {
  TopKPlan plan(ctx, problem);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
