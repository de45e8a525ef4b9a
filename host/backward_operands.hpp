// The backward's operands, one table (internal): name, whether the backward writes it, and which
// forwards' backwards take it. GmmBackwardPlan's presence and overlap checks come from these rows, on
// every path (unrouted: two independent plans; routed by ids; a forward with group sizes and an epilogue,
// run as the routed forward it equals); each part's own plan then checks its views as it binds them.
#pragma once

#include "vkgmm/ops.hpp"

namespace vkgmm {

// X(name, written, when): in GmmBackwardOperands' order.
#define VKGMM_BACKWARD_OPERAND_TABLE(X) \
  X(lhs, false, recomputed)             \
  X(rhs, false, weights)                \
  X(d_out, false, rows)                 \
  X(d_lhs, true, rows)                  \
  X(d_rhs, true, trained)               \
  X(group_sizes, false, grouped)        \
  X(workspace, true, bound)             \
  X(status, true, bound)                \
  X(ids, false, routed)                 \
  X(weights, false, combined)           \
  X(bias, false, bias)                  \
  X(d_bias, true, bias)                 \
  X(d_weights, true, combined)          \
  X(pre_activation, false, routed)

// Which backwards take an operand (each given view is checked against the forward), and which need it:
enum class BackwardWhen {
  bound,       // every one; optional (its part's plan checks a view it needs but was not given)
  rows,        // every one; needed where the forward has rows (m > 0)
  weights,     // every one; needed where the forward has rows and a local expert
  trained,     // weights not frozen in a block format; needed where their gradient is computed
  recomputed,  // every one; needed where the forward has rows and the backward reads them: for the
               // weights' gradient, or routed (its passes recompute the forward's product)
  grouped,     // a forward grouped by group sizes, not by expert ids
  routed,      // a forward routed by expert ids
  combined,    // routed by ids, combining each token's slots (Routing::combine)
  bias,        // routed by ids or by group sizes, with an epilogue bias
};

// Which path the backward takes (routed_backward.hpp): two independent plans, or the routed passes of a
// forward routed by ids or (group_sizes_routed) of one with group sizes and an epilogue.
struct BackwardFacts {
  bool routed_by_ids = false, group_sizes_routed = false, frozen = false, combine = false, bias = false;
  bool rows = false;           // m > 0
  bool local_experts = false;  // the forward has a local expert (G_local > 0)
  // The weights' gradient is computed: trained, with a local expert (an unrouted forward always has one).
  bool d_rhs = false;
};
BackwardFacts backward_facts(const GmmProblem& forward);

// Each view given exactly where the forward's backward takes it: "gmm_backward: <name>: a view was given
// but <why>"; where it needs one, "gmm_backward: <name>: <why> but no view was given" (named here, not by
// the part plan that binds it under another name). Then the overlap rule: each written view against
// every other given one, each pair once, "gmm_backward: <written> overlaps <other>" (of two written
// ones, the earlier in the table first).
void check_backward_operands(const GmmBackwardOperands& ops, const BackwardFacts& facts);

}  // namespace vkgmm
