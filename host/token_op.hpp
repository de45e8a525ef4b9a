// The core of the per-token ops, written once (internal): top-k routing's forward (TopKPlan) and its
// backward (TopKBackwardPlan) are one invocation per token over f32 and int32 operands, each op described
// by its operand table (top_k_operands.hpp) and its module. From the table come the sizes, the binding
// limits, the views' checks and overlap rule, the bindings and the push constants' offsets; an op's own
// file gives only its rules' messages, its loop bound and its constants.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "context_impl.hpp"
#include "shader_modules.hpp"
#include "dispatch.hpp"
#include "planned_pipeline.hpp"
#include "top_k_operands.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm {

// Error(invalid_argument) "<op>: <what>".
[[noreturn]] void refuse_top_k(const char* op, const std::string& what);

// TopKProblem's rules (top_k.hpp): tokens, experts and top_k in range, T * E within 32-bit indexing.
void check_top_k_problem(const char* op, const TopKProblem& p);

// Elements of an operand of this extent.
uint64_t token_operand_elements(const TopKProblem& p, TokenExtent extent);

// Tokens one invocation takes: the grid strides over the tokens past maxComputeWorkGroupCount[0]
// workgroups of VKGMM_TOPK_INVOCATIONS (what a CPU loop budget counts).
uint64_t tokens_per_invocation(const DeviceInfo& info, int64_t tokens);

// What an op adds to its table: its module, constants and the CPU loop budget's terms.
struct TokenOpModule {
  ShaderCode code;
  // The module's specialization constants, {id, value}; the others are 0.
  std::vector<std::pair<uint32_t, uint32_t>> constants;
  // Loop iterations of one invocation that takes `tokens` tokens (tiling.hpp, check_cpu_loop_budget).
  uint64_t (*loop_iterations)(const TopKProblem& p, uint64_t tokens) = nullptr;
  const char* advice = "";  // what the loop budget's refusal tells the app to do
};

class TokenOpCore {
 public:
  TokenOpCore() = default;
  // Checks the problem, the loop budget and every operand's binding limit, then makes the pipeline (none
  // without tokens).
  TokenOpCore(Context& ctx, const char* op, const TopKProblem& p, const TokenOperandRow* rows, size_t count,
              const TokenOpModule& module);
  const TopKProblem& problem() const { return problem_; }
  // Each view inside its buffer, the table's overlap rule (each written operand against every other, each
  // pair once, named "<written> overlaps <other>", the earlier written one first), then the dispatch binding
  // them in the rows' order, their element offsets into offsets[0 .. count).
  Dispatch bind(const BufferView* views, uint32_t* offsets) const;
  // Refuses a null command buffer, before any view is checked.
  void check_command_buffer(VkCommandBuffer cb) const;
  // The dispatch over the grid (its pipeline and grid set here); nothing without tokens.
  void record(VkCommandBuffer cb, Dispatch s) const;
  // Its pipeline under `role` (PlanInternals::pipelines); none without tokens.
  std::vector<PlannedPipeline> pipelines(const char* role) const;

 private:
  std::shared_ptr<Context::Impl> ctx_;
  const char* op_ = "";
  TopKProblem problem_;
  const TokenOperandRow* rows_ = nullptr;
  size_t count_ = 0;
  ShaderCode code_{};
  std::vector<uint32_t> constants_;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  uint32_t groups_ = 0;  // workgroups (0: nothing to record)
};

// An op's operands bound (TokenOpCore::bind) and its push constants filled from its table.
template <class Operands>
Dispatch bind_token_op(const TokenOpCore& core, const Operands& ops) {
  using Table = TokenOperandTable<Operands>;
  const auto views = Table::views(ops);
  uint32_t offsets[Table::count];
  Dispatch s = core.bind(views.data(), offsets);
  typename Table::Push& push = s.push.template start<typename Table::Push>();
  Table::set_offsets(push, offsets);
  const TopKProblem& p = core.problem();
  push.tokens = static_cast<uint32_t>(p.tokens);
  push.experts = static_cast<uint32_t>(p.experts);
  push.top_k = static_cast<uint32_t>(p.top_k);
  return s;
}

// The sizes struct an op's plan reports, each operand's bytes from its extent.
template <class Operands>
typename TokenOperandTable<Operands>::Sizes token_op_sizes(const TopKProblem& p) {
  using Table = TokenOperandTable<Operands>;
  std::array<VkDeviceSize, Table::count> bytes{};
  for (size_t i = 0; i < Table::count; ++i) bytes[i] = token_operand_elements(p, Table::rows[i].extent) * 4;
  return Table::sizes(bytes.data());
}

}  // namespace vkgmm
