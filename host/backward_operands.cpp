#include "backward_operands.hpp"

#include <string>

#include "operand_table.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "routed_backward.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm {

namespace {

enum class BackwardId : unsigned {
#define VKGMM_BACKWARD_ID(name, written, when) name,
  VKGMM_BACKWARD_OPERAND_TABLE(VKGMM_BACKWARD_ID)
#undef VKGMM_BACKWARD_ID
      count
};
constexpr size_t kCount = static_cast<size_t>(BackwardId::count);

constexpr PresenceRow<BackwardWhen> kRows[kCount] = {
#define VKGMM_BACKWARD_ROW(name, written, when) {#name, written, BackwardWhen::when},
    VKGMM_BACKWARD_OPERAND_TABLE(VKGMM_BACKWARD_ROW)
#undef VKGMM_BACKWARD_ROW
};

// Every field of GmmBackwardOperands is a row (one the table lacked would go unchecked).
static_assert(sizeof(GmmBackwardOperands) == kCount * sizeof(BufferView), "a backward operand the table lacks");

// Why the backward refuses a view of this row; null: it takes one.
const char* refusal(BackwardWhen when, const BackwardFacts& f) {
  const bool routed = f.routed_by_ids || f.group_sizes_routed;
  constexpr const char* unrouted = "the forward is not routed by expert ids (Routing::top_k = 0)";
  constexpr const char* host_groups = "the forward's groups are its group_sizes, on the host";
  switch (when) {
    case BackwardWhen::bound:
    case BackwardWhen::rows:
    case BackwardWhen::weights:
    case BackwardWhen::recomputed:
      return nullptr;
    case BackwardWhen::trained:
      return f.frozen ? "the weights are in a block format, frozen: their gradient is not computed" : nullptr;
    case BackwardWhen::grouped:
      if (f.routed_by_ids) return "the forward is routed by expert ids (the ids give the groups)";
      return f.group_sizes_routed ? host_groups : nullptr;
    case BackwardWhen::routed:
      return f.routed_by_ids ? nullptr : f.group_sizes_routed ? host_groups : unrouted;
    case BackwardWhen::combined:
      if (!f.routed_by_ids) return f.group_sizes_routed ? host_groups : unrouted;
      return f.combine ? nullptr : "the forward does not combine (Routing::combine)";
    case BackwardWhen::bias:
      if (!routed) return unrouted;
      return f.bias ? nullptr : "the forward has no bias (Epilogue::bias)";
  }
  return nullptr;
}

// Why the backward needs a view of this row; null: it does not, or a part's plan says so by the name.
const char* need(BackwardWhen when, const BackwardFacts& f) {
  switch (when) {
    case BackwardWhen::rows:
      return f.rows ? "the forward has rows (m > 0)" : nullptr;
    case BackwardWhen::weights:
      return f.rows && f.local_experts ? "the forward has rows and a local expert" : nullptr;
    case BackwardWhen::trained:
      return f.d_rhs ? "the weights' gradient is computed" : nullptr;
    case BackwardWhen::recomputed:
      if (!f.rows) return nullptr;
      if (f.d_rhs) return "the weights' gradient is computed from it";
      return f.routed_by_ids || f.group_sizes_routed ? "the routed backward recomputes the forward from it" : nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

BackwardFacts backward_facts(const GmmProblem& forward) {
  BackwardFacts f;
  f.routed_by_ids = forward.routing.top_k != 0;
  f.group_sizes_routed = !f.routed_by_ids && routed_backward(forward);
  f.frozen = is_quantized(forward.rhs_type);
  f.combine = forward.routing.combine;
  f.bias = forward.epilogue.bias;
  f.rows = forward.m > 0;
  // Read on the routed path only (GmmBackwardPlan's unrouted one counts its d_lhs plan's rhs), where group
  // sizes are on the host (routed_form refuses them on the device).
  f.local_experts =
      window_count(int64_t(forward.group_sizes.size()), forward.group_offset, forward.num_rhs_groups) > 0;
  f.d_rhs = !f.frozen && !(routed_backward(forward) && forward.num_rhs_groups == 0);
  return f;
}

void check_backward_operands(const GmmBackwardOperands& ops, const BackwardFacts& facts) {
  const BufferView views[kCount] = {
#define VKGMM_BACKWARD_VIEW(name, written, when) ops.name,
      VKGMM_BACKWARD_OPERAND_TABLE(VKGMM_BACKWARD_VIEW)
#undef VKGMM_BACKWARD_VIEW
  };
  check_table_presence(
      "gmm_backward", kRows, views, kCount, [&](size_t i) { return refusal(kRows[i].when, facts); },
      [&](size_t i) { return need(kRows[i].when, facts); });
  check_table_overlaps("gmm_backward", kRows, views, kCount);
}

}  // namespace vkgmm
