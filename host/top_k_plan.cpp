// TopKPlan: top-k routing's module and loop bound over the per-token core (token_op.hpp), its operands
// the table's (top_k_operands.hpp); one dispatch over the tokens (shaders/topk.comp).
#include "vkgmm/top_k.hpp"

#include "plan_internals.hpp"
#include "token_op.hpp"

namespace vkgmm {

namespace {
constexpr const char* kOp = "top_k";

// Loop iterations of one invocation (tiling.hpp, check_cpu_loop_budget), each loop's exit test one more
// (shaders/topk.comp): for each of its tokens the softmax's max and sum over the experts, a walk over the
// experts per chosen slot inside the slots' loop, and the weights' scaling over the slots.
uint64_t loop_iterations(const TopKProblem& p, uint64_t tokens) {
  const uint64_t e = uint64_t(p.experts), k = uint64_t(p.top_k);
  const uint64_t per_token = 2 * (e + 1) + (k + 1) + k * (e + 1) + (k + 1);
  return tokens * (per_token + 1) + 1;
}

TokenOpModule module(const TopKProblem& p) {
  // An invocation reads each of its tokens' logits top_k + 2 times: no existing_out to split that over calls.
  return {topk_shader(), {{VKGMM_ID_TOPK_RENORMALIZE, p.renormalize}}, loop_iterations,
          "choose among fewer experts per call, or fewer of them per token"};
}
}  // namespace

struct TopKPlan::State {
  TokenOpCore core;
};

TopKPlan::TopKPlan(Context& ctx, const TopKProblem& p) {
  using Table = TokenOperandTable<TopKOperands>;
  state_ = std::make_shared<State>(State{TokenOpCore(ctx, kOp, p, Table::rows, Table::count, module(p))});
}

std::vector<PlannedPipeline> PlanInternals::pipelines(const TopKPlan& plan) {
  return live_state(plan.state_, "top_k").core.pipelines("top_k");
}

const TopKProblem& TopKPlan::problem() const { return state_->core.problem(); }
TopKSizes TopKPlan::sizes() const { return token_op_sizes<TopKOperands>(problem()); }

void TopKPlan::check(const TopKOperands& ops) const { bind_token_op(live_state(state_, "top_k").core, ops); }

void TopKPlan::record(VkCommandBuffer cb, const TopKOperands& ops) const {
  const auto& core = live_state(state_, "top_k").core;
  core.check_command_buffer(cb);
  core.record(cb, bind_token_op(core, ops));
}

void top_k(Context& ctx, const TopKProblem& problem, const TopKOperands& ops) {
  TopKPlan plan(ctx, problem);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
