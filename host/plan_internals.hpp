// How vkgmm's own tools reach what a plan made (internal; the public headers name no internal type), as
// ContextInternals does for a Context's parts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include "planned_pipeline.hpp"
#include "routing_source.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm {

// A buffer a plan makes for its own use, `what` naming the plan and the buffer ("gmm: its workspace"): a
// failure says so, where create_buffer's message would name a call its caller never made.
inline Buffer plan_buffer(Context& ctx, VkDeviceSize bytes, const std::string& what) {
  try {
    return ctx.create_buffer(bytes);
  } catch (const Error& e) {
    // create_buffer's own words after its name, and after the size where it gives one first.
    std::string message = e.what();
    for (const std::string& lead : {std::string("create_buffer: "), std::to_string(bytes) + " bytes: "})
      if (message.compare(0, lead.size(), lead) == 0) message.erase(0, lead.size());
    throw Error(e.status(), what + " (" + std::to_string(bytes) + " bytes): " + message);
  }
}

struct PlanInternals {
  // Plans that are parts of another (MoeLayerPlan's, the routed backward's), which always gives them a
  // workspace: none of their own is allocated, and a record() without one is refused (internal).
  static GmmPlan part_of_another(Context& ctx, const GmmProblem& problem);           // host/gmm_plan.cpp
  static TgmmPlan part_of_another(Context& ctx, const TgmmProblem& problem);         // host/tgmm_plan.cpp
  // Routed plans that their owner always records with another plan's routing (record_routed_from,
  // record_backward): the build that copies it is compiled at planning, their own build only if a record()
  // gives none. A gmm's own workspace as own_workspace says; the backward is a part of another.
  static GmmPlan taking_routing(Context& ctx, const GmmProblem& problem, bool own_workspace);  // host/gmm_plan.cpp
  static GmmBackwardPlan taking_routing(Context& ctx, const GmmProblem& forward,
                                        const GmmBackwardOptions& options);  // host/backward.cpp
  // The pipelines record() binds, in dispatch order, then the build a given routing binds instead of the
  // plan's own (PlanCore::pipelines).
  static std::vector<PlannedPipeline> pipelines(const GmmPlan& plan);   // host/gmm_plan.cpp
  static std::vector<PlannedPipeline> pipelines(const TgmmPlan& plan);  // host/tgmm_plan.cpp
  static std::vector<PlannedPipeline> pipelines(const TopKPlan& plan);          // host/top_k_plan.cpp
  static std::vector<PlannedPipeline> pipelines(const TopKBackwardPlan& plan);  // host/top_k_backward_plan.cpp
  // A backward's parts in dispatch order, each with the pipelines its record may bind: "d_lhs" and
  // "d_rhs" (unrouted), or a routed forward's "forward" (the recompute saving its pre-activation), "grad",
  // "d_rhs", "d_bias" and "d_lhs" (its build of the forward's routing, never its own); the parts that do
  // not run are left out: d_rhs for frozen weights or no local expert, d_bias without a bias, and without
  // slots the forward, grad and d_lhs (host/backward.cpp).
  static std::vector<PlannedPart> parts(const GmmBackwardPlan& plan);
  // gmm's visit lists, one per pass of its kernel in dispatch order: each one's first word in the metadata
  // (its groups; the first rows follow) and its slots.
  struct VisitList {
    uint32_t offset = 0, slots = 0;
  };
  static std::vector<VisitList> visit_lists(const GmmPlan& plan);  // host/gmm_plan.cpp
  // Refuses (unsupported) on a compile-only context, naming `op`: an op made of parts refuses before it
  // checks any view, as each plan does.
  static void check_records(const GmmPlan& plan, const char* op);  // host/gmm_plan.cpp
  // Refuses a view that runs past the end of its buffer, naming `op` and `name`: for an op that hands its
  // parts slices of a view the caller gave (a workspace), which each check only their slice.
  static void check_in_buffer(const GmmPlan& plan, const char* op, const char* name, const BufferView& view);
  // Records only a routed plan's routing build (and its barrier): the row map and counts another pass
  // reads, the product not needed.
  static void record_routing(const GmmPlan& plan, VkCommandBuffer cb, const GmmOperands& ops);
  // A routed plan's routing as its record() into `workspace` (null: the plan's own, which a part of
  // another plan has not) leaves it, and a record() of another routed plan of the same slots that copies
  // it instead of ordering them again.
  static RoutingSource routing_source(const GmmPlan& plan, const BufferView& workspace);
  static void record_routed_from(const GmmPlan& plan, VkCommandBuffer cb, const GmmOperands& ops,
                                 const RoutingSource& routing);
  // What record_routed_from would throw, recording nothing (its build compiled).
  static void check_routed_from(const GmmPlan& plan, const GmmOperands& ops, const RoutingSource& routing);
  // A routed forward's backward whose passes take `routing` (the forward's) for their slots' order: no
  // routing build of their own (host/backward.cpp).
  static void record_backward(const GmmBackwardPlan& plan, VkCommandBuffer cb, const GmmBackwardOperands& ops,
                              const RoutingSource& routing);
  static void check_backward(const GmmBackwardPlan& plan, const GmmBackwardOperands& ops, const RoutingSource& routing);
};

// A plan's state, or where the plan was moved from (its state null), Error(invalid_argument) naming the op:
// plans are objects an engine moves into its own containers, and a moved-from one is easy to reach again.
template <class State>
const State& live_state(const std::shared_ptr<const State>& state, const char* op) {
  if (!state) throw Error(Status::invalid_argument, std::string(op) + ": the plan is empty (moved from)");
  return *state;
}

// What gmm's and tgmm's plans forward alike, written once: their internals for other plans, their public
// accessors (the State's problem, tiling and schedule, the rest the core's), and the one-call op (plan, run, wait). Used
// at namespace scope in each plan's source, where its State is defined.
#define VKGMM_GROUPED_PLAN_FORWARDS(Plan, Problem, Operands, op)                                                    \
  std::vector<PlannedPipeline> PlanInternals::pipelines(const Plan& plan) {                                         \
    return live_state(plan.state_, #op).core.pipelines();                                                          \
  }                                                                                                                \
  Plan PlanInternals::part_of_another(Context& ctx, const Problem& problem) { return Plan(ctx, problem, false); }   \
  const Problem& Plan::problem() const { return state_->problem; }                                                 \
  Tiling Plan::tiling() const { return state_->tiling; }                                                           \
  Schedule Plan::schedule() const { return state_->schedule; }                                                     \
  OperandSizes Plan::sizes() const { return live_state(state_, #op).core.sizes(); }                                \
  VkDeviceSize Plan::metadata_bytes() const { return state_->core.metadata_bytes(); }                              \
  VkDeviceSize Plan::workspace_bytes() const { return state_->core.workspace_bytes(); }                            \
  void Plan::check(const Operands& ops) const { live_state(state_, #op).core.check(views_of(ops)); }              \
  bool Plan::texel_loads(const Operands& ops) const { return state_->core.texel_loads(views_of(ops)); }            \
  void Plan::record(VkCommandBuffer cb, const Operands& ops) const {                                               \
    live_state(state_, #op).core.record(cb, views_of(ops));                                                        \
  }                                                                                                                \
  void op(Context& ctx, const Problem& problem, const Operands& ops) {                                              \
    Plan plan(ctx, problem);                                                                                       \
    ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });                                        \
  }

}  // namespace vkgmm
