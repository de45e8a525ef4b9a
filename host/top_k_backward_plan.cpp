// TopKBackwardPlan: the gradient's module and loop bound over the per-token core (token_op.hpp), its
// operands the table's (top_k_operands.hpp); one dispatch over the tokens (shaders/topk_grad.comp).
#include "vkgmm/top_k.hpp"

#include <algorithm>

#include "plan_internals.hpp"
#include "token_op.hpp"

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

TokenOpModule module(const TopKProblem& p, const TopKBackwardOptions& options) {
  return {topk_grad_shader(),
          {{VKGMM_ID_TOPK_RENORMALIZE, p.renormalize}, {VKGMM_ID_TOPK_GRAD_ACCUMULATE, options.accumulate}},
          loop_iterations, "differentiate over fewer experts per call, or fewer of them per token"};
}
}  // namespace

struct TopKBackwardPlan::State {
  TokenOpCore core;
  TopKBackwardOptions options;
};

TopKBackwardPlan::TopKBackwardPlan(Context& ctx, const TopKProblem& p, const TopKBackwardOptions& options) {
  using Table = TokenOperandTable<TopKBackwardOperands>;
  state_ = std::make_shared<State>(
      State{TokenOpCore(ctx, kOp, p, Table::rows, Table::count, module(p, options)), options});
}

std::vector<PlannedPipeline> PlanInternals::pipelines(const TopKBackwardPlan& plan) {
  return live_state(plan.state_, "top_k_backward").core.pipelines("top_k backward");
}

const TopKProblem& TopKBackwardPlan::problem() const { return state_->core.problem(); }
const TopKBackwardOptions& TopKBackwardPlan::options() const { return state_->options; }
TopKBackwardSizes TopKBackwardPlan::sizes() const { return token_op_sizes<TopKBackwardOperands>(problem()); }

void TopKBackwardPlan::check(const TopKBackwardOperands& ops) const { bind_token_op(live_state(state_, "top_k_backward").core, ops); }

void TopKBackwardPlan::record(VkCommandBuffer cb, const TopKBackwardOperands& ops) const {
  const auto& core = live_state(state_, "top_k_backward").core;
  core.check_command_buffer(cb);
  core.record(cb, bind_token_op(core, ops));
}

void top_k_backward(Context& ctx, const TopKProblem& forward, const TopKBackwardOperands& ops,
                    const TopKBackwardOptions& options) {
  TopKBackwardPlan plan(ctx, forward, options);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
