#include "top_k_common.hpp"

#include <algorithm>

#include "interface.hpp"
#include "operands.hpp"

namespace vkgmm {

void refuse_top_k(const char* op, const std::string& what) {
  throw Error(Status::invalid_argument, std::string(op) + ": " + what);
}

void check_top_k_problem(const char* op, const TopKProblem& p) {
  if (p.tokens < 0) refuse_top_k(op, "tokens: " + std::to_string(p.tokens) + " is negative");
  if (p.experts < 1) refuse_top_k(op, "experts: " + std::to_string(p.experts) + " must be at least 1");
  if (p.top_k < 1 || p.top_k > p.experts)
    refuse_top_k(op, "top_k: " + std::to_string(p.top_k) + " must be in [1, experts = " + std::to_string(p.experts) + "]");
  // The forward's invocation reads a token's logits top_k + 2 times (the backward's fewer): bounded, so
  // that no problem keeps a GPU busy long enough to be reset (the largest routers run 256 experts, top-8).
  if (p.experts > TopKProblem::max_experts)
    refuse_top_k(op, "experts: " + std::to_string(p.experts) + " is more than top_k routing takes (" +
                         std::to_string(TopKProblem::max_experts) + ")");
  if (p.top_k > TopKProblem::max_top_k)
    refuse_top_k(op, "top_k: " + std::to_string(p.top_k) + " is more than top_k routing takes (" +
                         std::to_string(TopKProblem::max_top_k) + ")");
  // The shaders index words with 32-bit integers; one binding addresses less anyway.
  constexpr int64_t kWords = int64_t(1) << 32;
  if (p.tokens > 0 && (p.experts >= kWords / p.tokens))
    refuse_top_k(op, "logits: tokens * experts = " + std::to_string(p.tokens) + " * " + std::to_string(p.experts) +
                         " elements is more than 32-bit indexing reaches");
}

Stage bind_token_operands(const Context::Impl& ctx, const char* op, std::initializer_list<TokenOperand> operands,
                          uint32_t* offsets) {
  Stage s;
  for (const TokenOperand& o : operands) {
    // int32 ids take f32's checks: 4-byte elements.
    const BoundOperand b = bind_operand(ctx, op, o.name, o.view, DType::f32, o.elements, 0, false);
    if (!s.count) s.bind_all(b.info);  // bindings the module does not declare
    s.infos[o.binding] = b.info;
    *offsets++ = b.element_offset;
  }
  ctx.dev.options.check_records(op);
  return s;
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

TokenDispatch::TokenDispatch(Context::Impl& ctx, int64_t tokens, const ShaderCode& code,
                             const std::vector<uint32_t>& constants) {
  if (tokens <= 0) return;
  groups = token_groups(ctx.dev.info, tokens);
  pipeline = ctx.pipeline(code.code, code.words, constants);
  ctx.log.throw_if_any();
}

void TokenDispatch::record(Context::Impl& ctx, VkCommandBuffer cb, Stage s) const {
  if (!groups) return;  // no tokens: the views checked, nothing to run
  s.pipeline = pipeline;
  s.grid[0] = groups;
  s.grid[1] = s.grid[2] = 1;
  s.record(ctx, cb);
}

}  // namespace vkgmm
