// The routed backward's passes besides d_lhs and d_rhs (host/routed_backward.cpp): GmmBackwardPlan
// holds one for a forward routed by expert ids.
#pragma once

#include <memory>
#include <optional>

#include "context_impl.hpp"
#include "backward_operands.hpp"
#include "routing_source.hpp"
#include "dispatch.hpp"
#include "planned_pipeline.hpp"
#include "vkgmm/ops.hpp"
#include "workspace_arena.hpp"

namespace vkgmm {

// Whether the backward takes the routed path: routed by expert ids, or an epilogue (a forward with
// group sizes then runs as the routed forward it equals: top_k = 1, each row's group its id).
bool routed_backward(const GmmProblem& forward);
// The d_lhs gmm and the d_rhs tgmm of a routed forward (GmmBackwardPlan makes them as its two plans).
GmmProblem routed_d_lhs_problem(const GmmProblem& forward, const GmmBackwardOptions& options);
TgmmProblem routed_d_rhs_problem(const GmmProblem& forward);

struct RoutedBackward {
  // `owner` composite: a part of another plan, which always gives it a workspace; app: the app gives every
  // record() one (none allocated either way). `routing_given`: its owner records it with the forward's
  // routing (MoeLayerPlan), so the recomputing forward's own build is compiled only if a record needs it.
  RoutedBackward(Context& ctx, const GmmProblem& forward, const GmmBackwardOptions& options, const GmmPlan& d_lhs,
                 const TgmmPlan* d_rhs, WorkspaceOwner owner, bool routing_given);
  GmmBackwardSizes sizes(const GmmPlan& d_lhs, const TgmmPlan* d_rhs) const;
  // Checks every view, then (record_it) records the passes with their barriers.
  // `routing`: the forward's order of the slots (its metadata build's words), which every pass then takes
  // instead of building its own; null: the first pass builds it and the others take that.
  void record(VkCommandBuffer cb, const GmmBackwardOperands& ops, const GmmPlan& d_lhs, const TgmmPlan* d_rhs,
              bool record_it, const RoutingSource* routing = nullptr) const;
  VkDeviceSize workspace_bytes() const { return total; }
  // Which views its backward takes (backward_operands.hpp), from the forward as given.
  const BackwardFacts& facts() const { return facts_; }
  // Its passes with their pipelines in dispatch order, d_lhs's and d_rhs's among them
  // (PlanInternals::parts).
  void add_parts(std::vector<PlannedPart>& out, const GmmPlan& d_lhs, const TgmmPlan* d_rhs) const;
  // The device memory it holds: its own workspace and ids, and its parts' host-built metadata.
  VkDeviceSize metadata_bytes() const {
    return own_workspace.size() + own_ids.size() + (h ? h->metadata_bytes() : 0) + (d_bias ? d_bias->metadata_bytes() : 0);
  }

 private:
  void record_routed(VkCommandBuffer cb, const GmmBackwardOperands& ops, const GmmPlan& d_lhs, const TgmmPlan* d_rhs,
                     bool record_it, const RoutingSource* given) const;
  Dispatch bind_grad(const GmmBackwardOperands& ops, const BufferView& work, const RoutingSource& routing,
                  const BufferView& pre_view) const;

  std::shared_ptr<Context::Impl> ctx;
  GmmProblem forward;  // routed (routed_form of a forward with group sizes)
  GmmBackwardOptions options;
  // The forward's extents (GmmShape): its slots, output columns, lhs rows and d_out's (its out's) rows.
  uint64_t slots = 0, out_n = 0, lhs_rows = 0, d_out_rows = 0;
  std::optional<GmmPlan> h;          // the forward, saving its pre-activation (none without slots)
  std::optional<TgmmPlan> d_bias;    // with a bias: ones^T @ d_h per expert
  // The gradient pass (shaders/routed_grad.comp): its constants (none without slots) without VEC4, and
  // whether rows of whole 4-column groups allow the VEC4 build, the planned one then; the other build
  // compiled at planning only on contexts that compile every pipeline a record can bind.
  std::vector<uint32_t> grad_constants;
  bool grad_vec4 = false;
  std::vector<uint32_t> grad_build(bool vec4) const;  // grad_constants, with VEC4 where `vec4`
  VkPipeline grad_pipeline(bool vec4) const;         // that build's, from the context's cache
  uint32_t grad_groups = 0;
  // The workspace: each plan's share, then the gradient area's regions, each bound on its own
  // (small: ones [slots], then the discarded d_weights [slots]).
  using Region = WorkspaceArena::Region;
  Region h_ws, d_lhs_ws, d_rhs_ws, d_bias_ws;
  VkDeviceSize total = 0;
  struct {
    Region d_h, sorted, gathered, small;
  } area;
  Buffer own_workspace;  // none for a part of another plan, or where the app gives every workspace
  WorkspaceOwner workspace_owner;
  Buffer own_ids;  // a forward with group sizes: each row's group, as ids [m, 1]
  BackwardFacts facts_;
};

}  // namespace vkgmm
