// The backward of a gmm routed by expert ids, with its epilogue (ops.hpp, GmmBackwardOperands): the
// product + bias recomputed per slot, the epilogue's gradient (shaders/routed_grad.comp), then tgmm over
// the slots in expert order for d_rhs and d_bias and a routed gmm with the flipped transpose for d_lhs.
// Every pass reads the first pass's routing build (its row map and counts), so all of them agree on
// which slots are local and in what order.
#include "routed_backward.hpp"

#include <algorithm>
#include <string>

#include "context_impl.hpp"
#include "matrix_schedule.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "plan_internals.hpp"
#include "problem_checks.hpp"
#include "shader_modules.hpp"
#include "dispatch.hpp"
#include "tiling.hpp"

namespace vkgmm {

namespace {
constexpr const char* kOp = "gmm_backward";

[[noreturn]] void refuse(Status s, const std::string& what) { throw Error(s, std::string(kOp) + ": " + what); }

BufferView sub_view(const BufferView& whole, VkDeviceSize offset, VkDeviceSize bytes) {
  return {whole.buffer, whole.offset + offset, bytes};
}

// The gradient pass's workgroup: one subgroup on CPU devices, whose drivers run a larger workgroup as
// coroutines switching at every barrier (lavapipe: 64 invocations made the combined rows' sums 8x slower
// than 8); else 64, a row's columns across two or more waves' lanes.
uint32_t grad_invocations(const DeviceInfo& info) {
  if (info.type == VK_PHYSICAL_DEVICE_TYPE_CPU && info.subgroup_size >= 1 && info.subgroup_size <= 64 &&
      (info.subgroup_size & (info.subgroup_size - 1)) == 0)
    return info.subgroup_size;
  return 64;
}

// One invocation's loop iterations in the gradient pass (shaders/routed_grad.comp): each of its
// workgroup's rows (the slots strided over the grid) walks the row's out_n and k columns 4 per
// invocation at a time, then halves the lanes to sum the row's dot product; one more per loop for its
// exit test. The gmms' own K budgets and the regions' binding limits keep it far inside a CPU driver's
// budget today; checked all the same, as every kernel's loops are.
uint64_t grad_pass_loops(uint64_t slots, uint64_t groups, uint64_t out_n, uint64_t k, uint64_t lanes) {
  uint64_t halvings = 0;
  for (uint64_t l = lanes; l > 1; l /= 2) ++halvings;
  const uint64_t step = 4 * lanes;
  const uint64_t per_row = (out_n + step - 1) / step + 1 + (k + step - 1) / step + 1 + halvings + 1;
  const uint64_t rows = groups ? (slots + groups - 1) / groups : 0;
  return rows * (per_row + 1) + 1;
}
}  // namespace

bool routed_backward(const GmmProblem& f) {
  return f.routing.top_k != 0 || f.epilogue.bias || f.epilogue.activation != Activation::none;
}

namespace {
// A forward with group sizes and an epilogue as the routed forward it equals: each row one slot (top_k
// = 1) whose id is its group (row_ids), every group an expert, the same window. Its lhs and d_lhs are
// per slot ([T, 1, k], the same memory as [T, k]): no row is shared between shards, so `accumulate`
// keeps the rows of other groups and overwrites its own, as the backward without an epilogue does.
GmmProblem routed_form(const GmmProblem& f) {
  if (f.routing.top_k != 0) return f;
  if (f.device_group_sizes.count > 0)
    refuse(Status::invalid_argument, "device_group_sizes: the backward of a fused bias or activation takes its "
                                     "rows' groups on the host (group_sizes), or ids (Routing)");
  GmmProblem p = f;
  const int64_t G = int64_t(f.group_sizes.size());
  p.group_sizes.clear();
  p.num_rhs_groups = window_count(G, f.group_offset, f.num_rhs_groups);
  p.routing = {1, true, false, G};
  return p;
}

// Row t's group, or -1 past the sizes' sum (rows of no group); sizes that break the contract are the
// routed plans' to refuse.
std::vector<int32_t> row_ids(const GmmProblem& f) {
  std::vector<int32_t> ids(size_t(std::max<int64_t>(f.m, 0)), -1);
  size_t row = 0;
  for (size_t g = 0; g < f.group_sizes.size(); ++g)
    for (int32_t i = 0; i < f.group_sizes[g] && row < ids.size(); ++i) ids[row++] = int32_t(g);
  return ids;
}
}  // namespace

GmmProblem routed_d_lhs_problem(const GmmProblem& forward, const GmmBackwardOptions& o) {
  // d_lhs(t, j) = d_h(t, j) @ W(ids[t, j])^T from the per-slot d_h (f32 [T, top_k, n] in the
  // workspace); a token-level lhs sums its slots' (a combine with unit weights).
  const GmmProblem f = routed_form(forward);
  return {.m = f.m, .k = f.n, .n = f.k, .num_rhs_groups = f.num_rhs_groups, .group_offset = f.group_offset,
          .transpose_rhs = !f.transpose_rhs, .lhs_type = DType::f32, .rhs_type = f.rhs_type, .out_type = f.lhs_type,
          .existing_out = o.accumulate, .tiling = f.tiling,
          .schedule = part_schedule(f.schedule, DType::f32, f.rhs_type), .grid = f.grid,
          .routing = {f.routing.top_k, true, !f.routing.lhs_per_slot, f.routing.num_experts}};
}

namespace {
int64_t local_experts(const GmmProblem& f) {
  if (f.num_rhs_groups < 0)
    refuse(Status::invalid_argument, "num_rhs_groups: a routed forward names its local experts (E_local); got " +
                                         std::to_string(f.num_rhs_groups));
  return f.num_rhs_groups;
}

// tgmm over the slots in expert order: lhs [slots, k] (the gathered rows, or ones for d_bias with k = 1),
// rhs d_h [slots, n], the local experts' sizes from the routing build (on the host: all 0 without slots).
TgmmProblem slots_tgmm(const GmmProblem& f, int64_t k, DType out_type, bool out_nk) {
  TgmmProblem p;
  const int64_t e_local = local_experts(f);
  p.m = f.m * f.routing.top_k;
  p.k = k;
  p.n = f.n;
  if (p.m > 0) {
    p.device_group_sizes = {e_local, 0};
  } else {
    p.group_sizes.assign(size_t(e_local), 0);
  }
  p.num_actual_groups = e_local;
  p.lhs_mk = true;
  p.out_nk = out_nk;
  p.lhs_type = p.rhs_type = DType::f32;
  p.out_type = out_type;
  p.tiling = f.tiling;
  p.schedule = part_schedule(f.schedule, p.lhs_type, p.rhs_type);
  p.grid = f.grid;
  return p;
}
}  // namespace

TgmmProblem routed_d_rhs_problem(const GmmProblem& forward) {
  const GmmProblem f = routed_form(forward);
  return slots_tgmm(f, f.k, f.rhs_type, f.transpose_rhs);
}

RoutedBackward::RoutedBackward(Context& context, const GmmProblem& given, const GmmBackwardOptions& o,
                               const GmmPlan& d_lhs, const TgmmPlan* d_rhs, WorkspaceOwner owner,
                               bool routing_given)
    : ctx(ContextInternals::shared(context)), forward(routed_form(given)), options(o), facts_(backward_facts(given)) {
  const GmmProblem& f = forward;
  const DeviceInfo& info = ctx->dev.info;
  // A compile-only context's plans hold no memory: nothing will read the ids or the workspace.
  const bool compile_only = ctx->dev.options.compile_only;
  if (given.routing.top_k == 0 && f.m > 0 && !compile_only) {
    const std::vector<int32_t> ids = row_ids(given);
    own_ids = plan_buffer(context, ids.size() * 4, std::string(kOp) + ": its rows' ids");
    own_ids.upload(ids.data(), ids.size() * 4);
  }
  // The forward's extents as its plan sees them (GmmBackwardPlan checked it).
  const GmmShape shape = check_gmm_problem(kOp, f);
  slots = uint64_t(shape.rows);
  out_n = uint64_t(shape.out_n);
  lhs_rows = uint64_t(shape.lhs_rows);
  d_out_rows = uint64_t(shape.out_rows);
  if (f.epilogue.bias && local_experts(f) > 0) d_bias.emplace(PlanInternals::part_of_another(context, slots_tgmm(f, 1, DType::f32, false)));
  if (slots > 0) {
    // The forward itself, saving its pre-activation (the product + bias per slot, f32): the same kernel
    // as a forward that saved it, so the same bits. Its output goes to scratch words of the area; with
    // the forward's saved pre-activation given, only its routing build runs.
    GmmProblem hp = f;
    hp.epilogue.save_pre_activation = true;
    hp.existing_out = false;
    h.emplace(routing_given ? PlanInternals::taking_routing(context, hp, false)
                            : PlanInternals::part_of_another(context, hp));
  }

  // The workspace: each plan's share at an aligned offset, then the gradient area's regions (f32), each
  // at an aligned offset and bound on its own: d_h per slot, d_h in expert order (first the recomputing
  // forward's discarded output), the gathered lhs rows, then ones and the discarded d_weights when the
  // app asks for none.
  WorkspaceArena arena(info);
  h_ws = arena.take(h ? h->workspace_bytes() : 0);
  d_lhs_ws = arena.take(d_lhs.workspace_bytes());
  d_rhs_ws = arena.take(d_rhs ? d_rhs->workspace_bytes() : 0);
  d_bias_ws = arena.take(d_bias ? d_bias->workspace_bytes() : 0);
  const uint64_t n = uint64_t(f.n), k = uint64_t(f.k);
  // Each region is one storage binding, its words indexed in 32 bits.
  auto region = [&](Region& r, uint64_t count, const char* what) {
    const VkDeviceSize bytes = slots ? count * 4 : 0;
    if (bytes > info.max_storage_buffer_range || count >= (uint64_t(1) << 32))
      refuse(Status::unsupported, std::string("workspace: the routed backward's ") + what + " (" +
                                      std::to_string(bytes) + " bytes) is past what one storage binding addresses "
                                      "on this device (" + std::to_string(info.max_storage_buffer_range) +
                                      " bytes): run fewer tokens per call");
    r = arena.take(bytes);
  };
  region(area.d_h, slots * n, "d_h per slot (T * top_k * n f32)");
  region(area.sorted, slots * n, "d_h in expert order (T * top_k * n f32)");
  region(area.gathered, slots * k, "gathered lhs rows (T * top_k * k f32)");
  region(area.small, 2 * slots, "ones and d_weights (T * top_k * 2 f32)");
  total = arena.bytes();
  if (h) {
    grad_groups = static_cast<uint32_t>(std::min<uint64_t>(slots, info.max_workgroup_count[0]));
    check_cpu_loop_budget(info, kOp, grad_pass_loops(slots, grad_groups, out_n, k, grad_invocations(info)),
                          "the gradient pass over " + std::to_string(slots) + " slots of " + std::to_string(out_n) +
                              " + " + std::to_string(k) + " columns",
                          "run fewer tokens per call");
    grad_constants = spec_constants({{VKGMM_ID_INVOCATIONS, grad_invocations(info)},
                                     {VKGMM_ID_LHS_TYPE, uint32_t(f.lhs_type)},
                                     {VKGMM_ID_OUT_TYPE, uint32_t(f.out_type)},
                                     {VKGMM_ID_VEC4, 0},
                                     {VKGMM_ID_GRAD_COMBINED, f.routing.combine},
                                     {VKGMM_ID_GRAD_ACCUMULATE, o.accumulate},
                                     {VKGMM_ID_GRAD_ACTIVATION, uint32_t(f.epilogue.activation)}});
    // Rows of whole 4-column groups also get the vector loads and stores, for views at such offsets.
    grad_vec4 = out_n % 4 == 0 && f.k % 4 == 0;
    grad_pipeline(grad_vec4);
    if (grad_vec4 && eager_pipelines(ctx->dev.options, info)) grad_pipeline(false);
    ctx->log.throw_if_any();
  }
  if (total && owner == WorkspaceOwner::self && !compile_only)
    own_workspace = plan_buffer(context, total, std::string(kOp) + ": its workspace");
  workspace_owner = owner;
}

std::vector<uint32_t> RoutedBackward::grad_build(bool vec4) const {
  std::vector<uint32_t> c = grad_constants;
  c[VKGMM_ID_VEC4] = vec4;
  return c;
}

VkPipeline RoutedBackward::grad_pipeline(bool vec4) const {
  const ShaderCode code = routed_grad_shader();
  return ctx->pipeline(code.code, code.words, grad_build(vec4), true);
}

void RoutedBackward::add_parts(std::vector<PlannedPart>& out, const GmmPlan& d_lhs, const TgmmPlan* d_rhs) const {
  // Without slots only the tgmms run (every expert's gradient 0).
  if (h) out.push_back({"forward", h->tiling(), PlanInternals::pipelines(*h)});
  if (!grad_constants.empty()) {
    // The vector build is the one the bench's and vkgmm's own aligned views take.
    out.push_back({"grad", std::nullopt,
                   {PlannedPipeline{"grad", routed_grad_shader(), grad_build(grad_vec4), true, grad_pipeline(grad_vec4)}}});
  }
  if (d_rhs) out.push_back({"d_rhs", d_rhs->tiling(), PlanInternals::pipelines(*d_rhs)});
  if (d_bias) out.push_back({"d_bias", d_bias->tiling(), PlanInternals::pipelines(*d_bias)});
  if (!h) return;
  // d_lhs takes the forward's routing: its build of a given one, never its own (taking_routing).
  out.push_back({"d_lhs", d_lhs.tiling(), PlanInternals::pipelines(d_lhs)});
}

GmmBackwardSizes RoutedBackward::sizes(const GmmPlan& d_lhs, const TgmmPlan* d_rhs) const {
  const GmmProblem& f = forward;
  GmmBackwardSizes s;
  s.lhs = operand_bytes(f.lhs_type, lhs_rows * uint64_t(f.k));
  s.rhs = d_lhs.sizes().rhs;
  s.d_out = operand_bytes(f.out_type, d_out_rows * out_n);
  s.d_lhs = d_lhs.sizes().out;
  s.d_rhs = d_rhs ? d_rhs->sizes().out : 0;
  // A forward with group sizes: its rows' ids are the plan's (none on a compile-only context), and no
  // pre-activation was saved.
  const bool ids_of_sizes = facts_.group_sizes_routed;
  s.ids = ids_of_sizes ? 0 : slots * 4;
  if (f.routing.combine) s.weights = s.d_weights = slots * 4;
  if (f.epilogue.bias) s.bias = s.d_bias = uint64_t(local_experts(f)) * uint64_t(f.n) * 4;
  if (!ids_of_sizes) s.pre_activation = slots * uint64_t(f.n) * 4;
  return s;
}

void RoutedBackward::record(VkCommandBuffer cb, const GmmBackwardOperands& ops, const GmmPlan& d_lhs,
                            const TgmmPlan* d_rhs, bool record_it, const RoutingSource* routing) const {
  // Which views the forward's backward takes and their overlaps: GmmBackwardPlan checked them
  // (backward_operands.hpp).
  GmmBackwardOperands routed_ops = ops;
  if (own_ids.handle()) routed_ops.ids = own_ids.view();  // group sizes: the plan's ids say each row's group
  if (routing && facts_.group_sizes_routed)
    refuse(Status::internal, "a routing given to the backward of a forward with group sizes");
  record_routed(cb, routed_ops, d_lhs, d_rhs, record_it, routing);
}

void RoutedBackward::record_routed(VkCommandBuffer cb, const GmmBackwardOperands& ops, const GmmPlan& d_lhs,
                                   const TgmmPlan* d_rhs, bool record_it, const RoutingSource* given) const {
  const GmmProblem& f = forward;
  // The workspace: the app's, or the plan's own.
  BufferView work = ops.workspace;
  check_workspace_view(kOp, work, total, ctx->dev.info);
  if (!work.buffer && total) {
    if (workspace_owner == WorkspaceOwner::app) refuse_missing_workspace(kOp);
    if (!own_workspace.handle()) refuse(Status::internal, "workspace: a part of another plan was given none");
    work = own_workspace.view();
  }

  const BufferView h_view = area.d_h.in(work);
  const BufferView sorted_view = area.sorted.in(work);
  const BufferView a_view = area.gathered.in(work);
  const BufferView ones_view = sub_view(work, area.small.offset, slots * 4);
  const BufferView h_work = h_ws.in(work);
  // The slots' order every pass takes: the forward's given one, else h's build (the recomputing forward's,
  // or with a saved pre-activation its routing build alone). The d_lhs gmm copies it, the gradient pass
  // reads its row map and group offsets, the tgmms its counts as their group sizes.
  const bool saved = ops.pre_activation.buffer != VK_NULL_HANDLE;
  const RoutingSource routing = given ? *given : h ? PlanInternals::routing_source(*h, h_work) : RoutingSource{};
  const bool build_h = h && !(saved && given);  // with both, nothing of h runs
  const BufferView sizes_view =
      h ? sub_view(routing.words, routing.sizes * 4, uint64_t(local_experts(f)) * 4) : BufferView{};

  GmmOperands h_ops;
  h_ops.lhs = ops.lhs, h_ops.rhs = ops.rhs, h_ops.ids = ops.ids, h_ops.bias = ops.bias;
  if (f.routing.combine) h_ops.weights = ops.weights;
  if (h) h_ops.out = sub_view(sorted_view, 0, h->sizes().out);
  // The first build writes the status word: h's, else the d_lhs gmm's.
  h_ops.workspace = h_work;
  if (build_h) h_ops.status = ops.status;
  // The pre-activation: the forward's, or the recomputing forward's in its workspace.
  const BufferView pre_view = saved ? ops.pre_activation : h ? h->saved_pre_activation(h_work) : BufferView{};
  TgmmOperands rhs_ops;
  rhs_ops.lhs = a_view, rhs_ops.rhs = sorted_view, rhs_ops.out = ops.d_rhs;
  if (h) rhs_ops.group_sizes = sizes_view, rhs_ops.workspace = d_rhs_ws.in(work);
  TgmmOperands bias_ops;
  bias_ops.lhs = ones_view, bias_ops.rhs = sorted_view, bias_ops.out = ops.d_bias;
  if (h && d_bias) bias_ops.group_sizes = sizes_view, bias_ops.workspace = d_bias_ws.in(work);
  GmmOperands lhs_ops;
  lhs_ops.lhs = h_view, lhs_ops.rhs = ops.rhs, lhs_ops.out = ops.d_lhs, lhs_ops.ids = ops.ids;
  if (options.accumulate) lhs_ops.existing_out = ops.d_lhs;
  if (!f.routing.lhs_per_slot) lhs_ops.weights = ones_view;
  lhs_ops.workspace = d_lhs_ws.in(work);
  if (!build_h) lhs_ops.status = ops.status;

  // Check every pass before recording any, so that a bad view records nothing.
  // The parts' refusals of the caller's views name them as the backward's operands.
  check_as_part(kOp, "the forward's recompute", {{"lhs", "lhs"}, {"rhs", "rhs"}, {"ids", "ids"}, {"bias", "bias"},
                                                 {"weights", "weights"}, {"status", "status"}}, [&] {
    if (build_h && given && !saved) PlanInternals::check_routed_from(*h, h_ops, *given);
    else if (h) h->check(h_ops);
  });
  if (d_rhs) check_as_part(kOp, "d_rhs's tgmm", {{"out", "d_rhs"}}, [&] { d_rhs->check(rhs_ops); });
  if (d_bias && ops.d_bias.buffer) check_as_part(kOp, "d_bias's tgmm", {{"out", "d_bias"}}, [&] { d_bias->check(bias_ops); });
  if (h)
    check_as_part(kOp, "d_lhs's gmm",
                  {{"rhs", "rhs"}, {"out", "d_lhs"}, {"existing_out", "d_lhs"}, {"ids", "ids"}, {"status", "status"}},
                  [&] { PlanInternals::check_routed_from(d_lhs, lhs_ops, routing); });
  Dispatch grad_stage;
  if (h) grad_stage = bind_grad(ops, work, routing, pre_view);
  if (!record_it) return;

  if (!h) {
    // No slots: nothing to gather; every expert's gradient is 0.
    if (d_rhs) d_rhs->record(cb, rhs_ops);
    if (d_bias && ops.d_bias.buffer) d_bias->record(cb, bias_ops);
    return;
  }
  if (build_h && saved) {
    PlanInternals::record_routing(*h, cb, h_ops);
  } else if (build_h) {
    if (given) PlanInternals::record_routed_from(*h, cb, h_ops, *given);
    else h->record(cb, h_ops);
  }
  compute_barrier(cb, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  grad_stage.record(*ctx, cb);
  compute_barrier(cb, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  // One after another: vkgmm's own buffers are read through texel views of the whole buffer, so a pass
  // that writes its share of the workspace must wait for the reads before it.
  if (d_rhs) {
    d_rhs->record(cb, rhs_ops);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT, VK_ACCESS_SHADER_WRITE_BIT);
  }
  if (d_bias && ops.d_bias.buffer) {
    d_bias->record(cb, bias_ops);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT, VK_ACCESS_SHADER_WRITE_BIT);
  }
  PlanInternals::record_routed_from(d_lhs, cb, lhs_ops, routing);
}

Dispatch RoutedBackward::bind_grad(const GmmBackwardOperands& ops, const BufferView& work, const RoutingSource& routing,
                                const BufferView& pre_view) const {
  const GmmProblem& f = forward;
  const Context::Impl& c = *ctx;
  const BoundOperand lhs = bind_operand(c, kOp, "lhs", ops.lhs, f.lhs_type, lhs_rows * uint64_t(f.k), 0, true);
  const BoundOperand d_out = bind_operand(c, kOp, "d_out", ops.d_out, f.out_type,
                                          d_out_rows * out_n, 0, true);
  auto bind_region = [&](const Region& r) {
    return bind_operand(c, kOp, "workspace", r.in(work), DType::f32, r.bytes / 4, 0, false);
  };
  const BoundOperand area_b = bind_region(area.small), d_h = bind_region(area.d_h);
  const BoundOperand sorted = bind_region(area.sorted), gathered = bind_region(area.gathered);
  const BoundOperand route =
      bind_operand(c, kOp, "workspace", routing.words, DType::f32, routing.words.size / 4, 0, false);
  const BoundOperand pre = bind_operand(c, kOp, "pre_activation", pre_view, DType::f32, slots * uint64_t(f.n), 0, false);
  Dispatch s;
  // The split layout: every binding valid, the pre-activation's past the plain six.
  std::fill(std::begin(s.infos), std::end(s.infos), area_b.info);
  s.count = kNumSplitBindings;
  s.infos[VKGMM_BINDING_GRAD_PRE] = pre.info;
  s.infos[VKGMM_BINDING_GRAD_D_H] = d_h.info;
  s.infos[VKGMM_BINDING_GRAD_SORTED] = sorted.info;
  s.infos[VKGMM_BINDING_GRAD_GATHERED] = gathered.info;
  s.infos[VKGMM_BINDING_GRAD_LHS] = lhs.info;
  s.infos[VKGMM_BINDING_GRAD_D_OUT] = d_out.info;
  s.infos[VKGMM_BINDING_GRAD_WORK] = area_b.info;
  s.infos[VKGMM_BINDING_GRAD_ROUTE] = route.info;
  abi::GradPush& push = s.push.start<abi::GradPush>();
  if (f.routing.combine) {
    const BoundOperand w = bind_operand(c, kOp, "weights", ops.weights, DType::f32, slots, 0, false);
    s.infos[VKGMM_BINDING_GRAD_WEIGHTS] = w.info;
    push.weights_off = w.element_offset;
    if (ops.d_weights.buffer) {
      const BoundOperand dw = bind_operand(c, kOp, "d_weights", ops.d_weights, DType::f32, slots, 0, false);
      s.infos[VKGMM_BINDING_GRAD_D_WEIGHTS] = dw.info;
      push.d_weights_off = dw.element_offset;
    } else {
      // No d_weights asked for: the pass writes them into the area's scratch words.
      s.infos[VKGMM_BINDING_GRAD_D_WEIGHTS] = area_b.info;
      push.d_weights_off = area_b.element_offset + uint32_t(slots);
    }
  }
  push.lhs_off = lhs.element_offset;
  push.d_out_off = d_out.element_offset;
  push.map_off = route.element_offset + uint32_t(routing.map);
  push.offsets_off = route.element_offset;  // the group offsets lead the routed gmm's metadata
  push.num_local = uint32_t(local_experts(f));
  push.h_off = d_h.element_offset;
  push.sorted_off = sorted.element_offset;
  push.a_off = gathered.element_offset;
  push.ones_off = area_b.element_offset;
  push.pre_off = pre.element_offset;
  push.slots = uint32_t(slots);
  push.top_k = uint32_t(f.routing.top_k);
  push.lhs_div = f.routing.lhs_per_slot ? 1u : uint32_t(f.routing.top_k);
  push.k = uint32_t(f.k);
  push.n = uint32_t(f.n);
  push.out_n = uint32_t(out_n);
  // The vector loads and stores where every view's element offset is a multiple of 4 (the same bits).
  const bool aligned = lhs.element_offset % 4 == 0 && d_out.element_offset % 4 == 0 && pre.element_offset % 4 == 0 &&
                       d_h.element_offset % 4 == 0 && sorted.element_offset % 4 == 0 &&
                       gathered.element_offset % 4 == 0;
  s.pipeline = grad_pipeline(grad_vec4 && aligned);
  s.grid[0] = grad_groups;
  s.grid[1] = s.grid[2] = 1;
  return s;
}

}  // namespace vkgmm
