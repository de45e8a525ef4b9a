// What top-k routing's forward (TopKPlan) and backward (TopKBackwardPlan) share (internal): the problem's
// rules, refused under each op's name, and their dispatch of one invocation per token.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "context_impl.hpp"
#include "shader_modules.hpp"
#include "stage.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm {

// Error(invalid_argument) "<op>: <what>".
[[noreturn]] void refuse_top_k(const char* op, const std::string& what);

// TopKProblem's rules (top_k.hpp): tokens, experts and top_k in range, T * E within 32-bit indexing.
void check_top_k_problem(const char* op, const TopKProblem& p);

// An operand of the per-token modules: f32 or int32 (4-byte elements), at its binding of the plain layout.
struct TokenOperand {
  const char* name;
  BufferView view;
  uint64_t elements;
  uint32_t binding;
};
// The stage binding these views (each checked as bind_operand checks it; the module's other bindings at
// the first's), their element offsets into offsets[0 ..), in order. The caller checks overlaps first and
// fills the push constants after.
Stage bind_token_operands(const Context::Impl& ctx, const char* op, std::initializer_list<TokenOperand> operands,
                          uint32_t* offsets);

// One invocation per token (VKGMM_TOPK_INVOCATIONS a workgroup, tokens past the largest grid strided
// over): the pipeline and the grid, none when there are no tokens.
// Tokens one invocation of a TokenDispatch takes: its grid strides over the tokens past
// maxComputeWorkGroupCount[0] workgroups of VKGMM_TOPK_INVOCATIONS (what a CPU loop budget counts).
uint64_t tokens_per_invocation(const DeviceInfo& info, int64_t tokens);

struct TokenDispatch {
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t groups = 0;  // workgroups (0: nothing to record)

  TokenDispatch() = default;
  TokenDispatch(Context::Impl& ctx, int64_t tokens, const ShaderCode& code, const std::vector<uint32_t>& constants);
  // s (its bindings and push constants set) dispatched over the grid; nothing without tokens.
  void record(Context::Impl& ctx, VkCommandBuffer cb, Stage s) const;
};

}  // namespace vkgmm
