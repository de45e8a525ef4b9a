#include "token_op.hpp"

#include <algorithm>

#include "interface.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "tiling.hpp"

namespace vkgmm {

void refuse_top_k(const char* op, const std::string& what) {
  throw Error(Status::invalid_argument, std::string(op) + ": " + what);
}

void check_top_k_problem(const char* op, const TopKProblem& p) {
  if (p.tokens < 0) refuse_top_k(op, "tokens: " + std::to_string(p.tokens) + " is negative");
  if (p.experts < 1) refuse_top_k(op, "experts: " + std::to_string(p.experts) + " must be at least 1");
  if (p.top_k < 1 || p.top_k > p.experts)
    refuse_top_k(op, "top_k = " + std::to_string(p.top_k) + " must be in [1, experts = " + std::to_string(p.experts) + "]");
  // The forward's invocation reads a token's logits top_k + 2 times (the backward's fewer): bounded, so
  // that no problem keeps a GPU busy long enough to be reset (the largest routers run 256 experts, top-8).
  if (p.experts > TopKProblem::max_experts)
    refuse_top_k(op, "experts: " + std::to_string(p.experts) + " is more than top_k routing takes (" +
                         std::to_string(TopKProblem::max_experts) + ")");
  if (p.top_k > TopKProblem::max_top_k)
    refuse_top_k(op, "top_k = " + std::to_string(p.top_k) + " is more than top_k routing takes (" +
                         std::to_string(TopKProblem::max_top_k) + ")");
  // The shaders index words with 32-bit integers; one binding addresses less anyway.
  constexpr int64_t kWords = int64_t(1) << 32;
  if (p.tokens > 0 && (p.experts >= kWords / p.tokens))
    refuse_top_k(op, "logits: tokens * experts = " + std::to_string(p.tokens) + " * " + std::to_string(p.experts) +
                         " elements is more than 32-bit indexing reaches");
}

uint64_t token_operand_elements(const TopKProblem& p, TokenExtent extent) {
  return uint64_t(p.tokens) * uint64_t(extent == TokenExtent::logits ? p.experts : p.top_k);
}

namespace {
// The grid: a workgroup per VKGMM_TOPK_INVOCATIONS tokens, at most the device's limit (striding past it).
uint32_t token_groups(const DeviceInfo& info, int64_t tokens) {
  if (tokens <= 0) return 0;
  const uint64_t needed = (uint64_t(tokens) + VKGMM_TOPK_INVOCATIONS - 1) / VKGMM_TOPK_INVOCATIONS;
  return static_cast<uint32_t>(std::min<uint64_t>(needed, info.max_workgroup_count[0]));
}
}  // namespace

uint64_t tokens_per_invocation(const DeviceInfo& info, int64_t tokens) {
  if (tokens <= 0) return 0;
  const uint64_t lanes = uint64_t(token_groups(info, tokens)) * VKGMM_TOPK_INVOCATIONS;
  return (uint64_t(tokens) + lanes - 1) / lanes;
}

TokenOpCore::TokenOpCore(Context& ctx, const char* op, const TopKProblem& p, const TokenOperandRow* rows,
                         size_t count, const TokenOpModule& module)
    : ctx_(ContextInternals::shared(ctx)), op_(op), problem_(p), rows_(rows), count_(count) {
  check_top_k_problem(op, p);
  const DeviceInfo& info = ctx_->dev.info;
  check_cpu_loop_budget(info, op, module.loop_iterations(p, tokens_per_invocation(info, p.tokens)),
                        "top_k = " + std::to_string(p.top_k) + " over experts = " + std::to_string(p.experts),
                        module.advice);
  for (size_t i = 0; i < count; ++i)
    check_operand_limits(op, info, {{rows[i].name, token_operand_elements(p, rows[i].extent) * 4}});
  if (p.tokens <= 0) return;
  groups_ = token_groups(info, p.tokens);
  constants_ = spec_constants(module.constants);
  code_ = module.code;
  pipeline_ = ctx_->pipeline(code_.code, code_.words, constants_);
  ctx_->log.throw_if_any();
}

std::vector<PlannedPipeline> TokenOpCore::pipelines(const char* role) const {
  if (!pipeline_) return {};
  return {{role, code_, constants_, false, pipeline_}};
}

Dispatch TokenOpCore::bind(const BufferView* views, uint32_t* offsets) const {
  // Each view inside its buffer first (bind_operand checks it again), then the overlaps between them.
  for (size_t i = 0; i < count_; ++i) check_view_in_buffer(*ctx_, op_, rows_[i].name, views[i]);
  check_table_overlaps(op_, rows_, views, count_);
  Dispatch s;
  for (size_t i = 0; i < count_; ++i) {
    const BoundOperand b = bind_words(*ctx_, op_, rows_[i].name, views[i],
                                      token_operand_elements(problem_, rows_[i].extent), rows_[i].values);
    if (!s.count) s.bind_all(b.info);  // bindings the module does not declare
    s.infos[rows_[i].binding] = b.info;
    offsets[i] = b.element_offset;
  }
  ctx_->dev.options.check_records(op_);
  return s;
}

void TokenOpCore::check_command_buffer(VkCommandBuffer cb) const {
  if (cb == VK_NULL_HANDLE) refuse_top_k(op_, "command buffer is VK_NULL_HANDLE");
}

void TokenOpCore::record(VkCommandBuffer cb, Dispatch s) const {
  check_command_buffer(cb);
  if (!groups_) return;  // no tokens: the views checked, nothing to run
  s.pipeline = pipeline_;
  s.grid[0] = groups_;
  s.grid[1] = s.grid[2] = 1;
  s.record(*ctx_, cb);
}

}  // namespace vkgmm
