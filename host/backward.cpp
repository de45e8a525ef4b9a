// The gmm backward: d_lhs by gmm with the flipped transpose, d_rhs by tgmm reading lhs [m, k] as lhs^T.
#include <algorithm>

#include <string>

#include "problem_checks.hpp"
#include "matrix_schedule.hpp"
#include "plan_internals.hpp"
#include "backward_operands.hpp"
#include "routed_backward.hpp"
#include "vkgmm/ops.hpp"
#include "workspace_arena.hpp"

namespace vkgmm {

namespace {

// The forward's rules, under the backward's name and the forward's fields, before its two parts (whose
// problems swap k and n, lhs and out) are made.
const GmmProblem& checked_forward(const GmmProblem& f) {
  check_gmm_problem("gmm_backward", f);
  return f;
}

GmmProblem d_lhs_problem(const GmmProblem& f, const GmmBackwardOptions& o) {
  if (routed_backward(f)) return routed_d_lhs_problem(f, o);
  GmmProblem p = f;
  // d_lhs[m, k] = d_out[m, n] @ rhs^T: gmm with k and n swapped and the transpose flipped.
  p.k = f.n;
  p.n = f.k;
  p.transpose_rhs = !f.transpose_rhs;
  p.lhs_type = f.out_type;  // d_out
  p.out_type = f.lhs_type;
  p.existing_out = o.accumulate;  // else rows outside the active groups get zero gradient
  p.schedule = part_schedule(f.schedule, p.lhs_type, p.rhs_type);
  return p;
}

TgmmProblem d_rhs_problem(const GmmProblem& f) {
  if (routed_backward(f)) return routed_d_rhs_problem(f);
  // The forward's lhs [m, k] read as lhs^T, d_out as rhs; the gradient has rhs's type and layout, and
  // num_rhs_groups -1 stays "G - group_offset", as for the forward's rhs.
  return {.m = f.m, .k = f.k, .n = f.n, .group_sizes = f.group_sizes, .device_group_sizes = f.device_group_sizes,
          .group_offset = f.group_offset, .num_actual_groups = f.num_rhs_groups, .lhs_mk = true,
          .out_nk = f.transpose_rhs, .lhs_type = f.lhs_type, .rhs_type = f.out_type, .out_type = f.rhs_type,
          .tiling = f.tiling, .schedule = part_schedule(f.schedule, f.lhs_type, f.out_type), .grid = f.grid};
}

// d_lhs's gmm. Routed, the backward records it with the forward's routing, never its own build; its own
// workspace all the same where the backward has one (public: an app may record it on its own).
GmmPlan d_lhs_gmm(Context& ctx, const GmmProblem& forward, const GmmBackwardOptions& options, bool own_workspace) {
  const GmmProblem p = d_lhs_problem(checked_forward(forward), options);
  if (routed_backward(forward)) return PlanInternals::taking_routing(ctx, p, own_workspace);
  return own_workspace ? GmmPlan(ctx, p) : PlanInternals::part_of_another(ctx, p);
}

}  // namespace

GmmBackwardPlan::GmmBackwardPlan(Context& ctx, const GmmProblem& forward, const GmmBackwardOptions& options)
    : GmmBackwardPlan(ctx, forward, options, true) {}

GmmBackwardPlan::GmmBackwardPlan(Context& ctx, const GmmProblem& forward, const GmmBackwardOptions& options,
                                 bool own_workspace, bool routing_given)
    : d_lhs_(d_lhs_gmm(ctx, forward, options, own_workspace)),
      frozen_(is_quantized(forward.rhs_type)),
      app_workspace_(own_workspace && app_plan_owner(ctx) == WorkspaceOwner::app) {
  // Block-format weights are frozen: no gradient of theirs (it could not be stored in their format).
  // A routed shard with no local expert has no weights to differentiate (backward_facts).
  if (backward_facts(forward).d_rhs)
    d_rhs_.emplace(own_workspace ? TgmmPlan(ctx, d_rhs_problem(forward)) : PlanInternals::part_of_another(ctx, d_rhs_problem(forward)));
  if (routed_backward(forward)) {
    routed_ = std::make_shared<const RoutedBackward>(ctx, forward, options, d_lhs_, d_rhs_ ? &*d_rhs_ : nullptr,
                                                     own_workspace ? app_plan_owner(ctx) : WorkspaceOwner::composite,
                                                     routing_given);
    return;
  }
  // The workspace holds d_lhs's share, then d_rhs's.
  WorkspaceArena arena(ctx.info());
  arena.take(d_lhs_.workspace_bytes());
  d_rhs_workspace_offset_ = arena.take(d_rhs_ ? d_rhs_->workspace_bytes() : 0).offset;
}

GmmBackwardPlan PlanInternals::taking_routing(Context& ctx, const GmmProblem& forward,
                                              const GmmBackwardOptions& options) {
  return GmmBackwardPlan(ctx, forward, options, false, true);
}

const TgmmPlan& GmmBackwardPlan::d_rhs_plan() const {
  if (!d_rhs_ && !frozen_)
    throw Error(Status::invalid_argument, "gmm_backward: d_rhs_plan: the forward has no local expert "
                                          "(num_rhs_groups = 0): there is no gradient of weights to compute");
  if (!d_rhs_)
    throw Error(Status::invalid_argument, "gmm_backward: d_rhs_plan: the weights are in a block format, frozen: "
                                          "their gradient is not computed");
  return *d_rhs_;
}

VkDeviceSize GmmBackwardPlan::workspace_bytes() const {
  if (routed_) return routed_->workspace_bytes();
  // Up to the end of d_rhs's share (its plan's workspace_bytes() is 0 with group sizes on the host).
  if (!d_rhs_ || !d_rhs_->workspace_bytes()) return d_lhs_.workspace_bytes();
  return d_rhs_workspace_offset_ + d_rhs_->workspace_bytes();
}

GmmBackwardSizes GmmBackwardPlan::sizes() const {
  if (routed_) return routed_->sizes(d_lhs_, d_rhs_ ? &*d_rhs_ : nullptr);
  // d_lhs = gmm(d_out, rhs) -> d_lhs and d_rhs = tgmm(lhs^T, d_out) -> d_rhs; d_out is read by both.
  const OperandSizes a = d_lhs_.sizes();
  GmmBackwardSizes s;
  s.rhs = a.rhs, s.d_out = a.lhs, s.d_lhs = a.out;
  if (!d_rhs_) return s;
  const OperandSizes b = d_rhs_->sizes();
  s.lhs = b.lhs, s.d_out = std::max(a.lhs, b.rhs), s.d_rhs = b.out;
  return s;
}

VkDeviceSize GmmBackwardPlan::metadata_bytes() const {
  return d_lhs_.metadata_bytes() + (d_rhs_ ? d_rhs_->metadata_bytes() : 0) + (routed_ ? routed_->metadata_bytes() : 0);
}

namespace {
constexpr const char* kOp = "gmm_backward";
// d_lhs's gmm reads d_out as its lhs and writes d_lhs as its out.
constexpr const char* kDLhsPart = "d_lhs's gmm";
constexpr std::initializer_list<PartOperand> kDLhsNames = {
    {"lhs", "d_out"}, {"rhs", "rhs"}, {"out", "d_lhs"}, {"existing_out", "d_lhs"}, {"group_sizes", "group_sizes"},
    {"workspace", "workspace"}, {"status", "status"}};

// d_lhs = gmm(d_out, rhs, transposed) and d_rhs = tgmm(lhs, d_out): the backward's views as theirs.
GmmOperands d_lhs_operands(const GmmBackwardOperands& ops, const BufferView& workspace, const BufferView& status,
                           bool accumulate) {
  GmmOperands g;
  g.lhs = ops.d_out, g.rhs = ops.rhs, g.out = ops.d_lhs;
  if (accumulate) g.existing_out = ops.d_lhs;
  g.group_sizes = ops.group_sizes, g.workspace = workspace, g.status = status;
  return g;
}
TgmmOperands d_rhs_operands(const GmmBackwardOperands& ops, const BufferView& workspace) {
  TgmmOperands t;
  t.lhs = ops.lhs, t.rhs = ops.d_out, t.out = ops.d_rhs;
  t.group_sizes = ops.group_sizes, t.workspace = workspace, t.status = ops.status;
  return t;
}
}  // namespace

void GmmBackwardPlan::check_or_record(VkCommandBuffer cb, const GmmBackwardOperands& ops, bool record_it,
                                      const RoutingSource* routing) const {
  PlanInternals::check_records(d_lhs_, kOp);
  // Which views this forward's backward takes, and the overlaps between them (the table's rules); each
  // part's plan then checks the views it binds.
  BackwardFacts facts;
  facts.frozen = frozen_, facts.rows = d_lhs_.problem().m > 0, facts.d_rhs = d_rhs_.has_value();
  facts.local_experts = d_lhs_.sizes().rhs > 0;
  check_backward_operands(ops, routed_ ? routed_->facts() : facts);
  PlanInternals::check_in_buffer(d_lhs_, kOp, "workspace", ops.workspace);  // its parts see slices of it
  if (routed_) {
    routed_->record(cb, ops, d_lhs_, d_rhs_ ? &*d_rhs_ : nullptr, record_it, routing);
    return;
  }
  if (routing) throw Error(Status::internal, "gmm_backward: a routing given to the backward of an unrouted forward");
  if (!ops.workspace.buffer && app_workspace_ && workspace_bytes()) refuse_missing_workspace("gmm_backward");
  const bool accumulate = d_lhs_.problem().existing_out;
  if (!d_rhs_) {
    // Frozen weights: d_lhs alone, which then writes the status word.
    const GmmOperands d_lhs_ops = d_lhs_operands(ops, ops.workspace, ops.status, accumulate);
    check_as_part(kOp, kDLhsPart, kDLhsNames, [&] { d_lhs_.check(d_lhs_ops); });
    if (record_it) d_lhs_.record(cb, d_lhs_ops);
    return;
  }
  // Device group sizes: both read them; the workspace is split between the two (with the sizes on the
  // host, d_rhs's split reduction alone may have a share); the status word is d_rhs's to write (its tgmm
  // always runs, even with m = 0).
  BufferView lhs_work, rhs_work;
  if (ops.workspace.buffer) {
    // Its offset is each share's plan's to check.
    if (ops.workspace.size < workspace_bytes())
      throw Error(Status::invalid_argument, "gmm_backward: workspace: view of " + std::to_string(ops.workspace.size) +
                                                " bytes is too small: the plan needs " +
                                                std::to_string(workspace_bytes()) + " (workspace_bytes())");
    // A part with no workspace (group sizes on the host; d_rhs without a split reduction) gets no view.
    if (d_lhs_.workspace_bytes()) lhs_work = {ops.workspace.buffer, ops.workspace.offset, d_lhs_.workspace_bytes()};
    if (d_rhs_->workspace_bytes())
      rhs_work = {ops.workspace.buffer, ops.workspace.offset + d_rhs_workspace_offset_, d_rhs_->workspace_bytes()};
  }
  const GmmOperands d_lhs_ops = d_lhs_operands(ops, lhs_work, {}, accumulate);
  const TgmmOperands d_rhs_ops = d_rhs_operands(ops, rhs_work);
  // Check both before recording either, so a bad view records nothing. The two dispatches run with no
  // barrier between them: that neither output overlaps anything the other reads or writes is the
  // table's overlap rule, checked above.
  check_as_part(kOp, kDLhsPart, kDLhsNames, [&] { d_lhs_.check(d_lhs_ops); });
  check_as_part(kOp, "d_rhs's tgmm",
                {{"lhs", "lhs"}, {"rhs", "d_out"}, {"out", "d_rhs"}, {"group_sizes", "group_sizes"},
                 {"workspace", "workspace"}, {"status", "status"}},
                [&] { d_rhs_->check(d_rhs_ops); });
  if (!record_it) return;
  d_lhs_.record(cb, d_lhs_ops);
  d_rhs_->record(cb, d_rhs_ops);
}

void GmmBackwardPlan::check(const GmmBackwardOperands& ops) const { check_or_record(VK_NULL_HANDLE, ops, false); }
void GmmBackwardPlan::record(VkCommandBuffer cb, const GmmBackwardOperands& ops) const {
  if (cb == VK_NULL_HANDLE)
    throw Error(Status::invalid_argument, "gmm_backward: command buffer is VK_NULL_HANDLE");
  check_or_record(cb, ops, true);
}

void PlanInternals::record_backward(const GmmBackwardPlan& plan, VkCommandBuffer cb, const GmmBackwardOperands& ops,
                                    const RoutingSource& routing) {
  if (cb == VK_NULL_HANDLE)
    throw Error(Status::invalid_argument, "gmm_backward: command buffer is VK_NULL_HANDLE");
  plan.check_or_record(cb, ops, true, &routing);
}
void PlanInternals::check_backward(const GmmBackwardPlan& plan, const GmmBackwardOperands& ops,
                                   const RoutingSource& routing) {
  plan.check_or_record(VK_NULL_HANDLE, ops, false, &routing);
}

std::vector<PlannedPart> PlanInternals::parts(const GmmBackwardPlan& plan) {
  live_state(plan.d_lhs_.state_, kOp);  // a moved-from backward's parts are moved from too
  std::vector<PlannedPart> out;
  const TgmmPlan* d_rhs = plan.d_rhs_ ? &*plan.d_rhs_ : nullptr;
  if (plan.routed_) {
    plan.routed_->add_parts(out, plan.d_lhs_, d_rhs);
    return out;
  }
  out.push_back({"d_lhs", plan.d_lhs_.tiling(), pipelines(plan.d_lhs_)});
  if (d_rhs) out.push_back({"d_rhs", d_rhs->tiling(), pipelines(*d_rhs)});
  return out;
}

void gmm_backward(Context& ctx, const GmmProblem& forward, const GmmBackwardOperands& ops,
                  const GmmBackwardOptions& options) {
  GmmBackwardPlan plan(ctx, forward, options);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
