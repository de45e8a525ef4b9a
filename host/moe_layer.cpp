// MoeLayerPlan: the MoE layer's passes as the library's plans, one workspace laid out for all of them.
// Forward: router gmm (one group) -> top-k -> up projection (routed, per slot, bias + activation) -> down
// projection (per-slot input, combined with the weights, bias). Backward: the down projection's (d_hidden,
// d_w_down, d_b_down, d_weights) -> the up projection's (d_x, d_w_up, d_b_up) and top-k's (d_logits) ->
// the router's (d_router_w, d_x += d_logits @ router_w^T).
#include "vkgmm/moe_layer.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "operands.hpp"
#include "plan_internals.hpp"
#include "problem_checks.hpp"
#include "dispatch.hpp"
#include "workspace_arena.hpp"

namespace vkgmm {

namespace {
constexpr const char* kOp = "moe_layer";
// The passes, as the layer's refusals name them.
constexpr const char* kRouter = "the router (x @ router_w)";
constexpr const char* kTopK = "the top-k of the router's logits";
constexpr const char* kUp = "the up projection (x @ w_up)";
constexpr const char* kDown = "the down projection (hidden @ w_down)";
constexpr const char* kDownBackward = "the down projection's backward";
constexpr const char* kUpBackward = "the up projection's backward";
constexpr const char* kTopKBackward = "the top-k's backward";
constexpr const char* kRouterDw = "the router's weight gradient (x^T @ d_logits)";
constexpr const char* kRouterDx = "the router's input gradient (d_logits @ router_w^T)";

[[noreturn]] void refuse(const std::string& what) { throw Error(Status::invalid_argument, std::string(kOp) + ": " + what); }

int64_t local_experts(const MoeLayerProblem& p) { return window_count(p.num_experts, p.expert_offset, p.local_experts); }

void check_problem(const MoeLayerProblem& p) {
  const std::pair<const char*, int64_t> dims[] = {{"tokens", p.tokens}, {"d_model", p.d_model}, {"d_ff", p.d_ff}};
  for (const auto& [name, v] : dims)
    if (v < (std::string(name) == "tokens" ? 0 : 1))
      refuse(std::string(name) + ": " + std::to_string(v) + (std::string(name) == "tokens" ? " is negative" : " must be at least 1"));
  if (p.num_experts < 1) refuse("num_experts: " + std::to_string(p.num_experts) + " must be at least 1");
  if (p.top_k < 1 || p.top_k > p.num_experts)
    refuse("top_k: " + std::to_string(p.top_k) + " must be in [1, num_experts = " + std::to_string(p.num_experts) + "]");
  if (p.expert_offset < 0 || p.expert_offset > p.num_experts)
    refuse("expert_offset: " + std::to_string(p.expert_offset) + " must be in [0, num_experts = " +
           std::to_string(p.num_experts) + "]");
  const int64_t e_local = local_experts(p);
  if (e_local < 0 || p.expert_offset + e_local > p.num_experts)
    refuse("local_experts: " + std::to_string(p.local_experts) + " must be in [0, num_experts - expert_offset = " +
           std::to_string(p.num_experts - p.expert_offset) + "] (or -1)");
  if (!is_known(p.dtype) || is_quantized(p.dtype))
    refuse(std::string("dtype: ") + (is_known(p.dtype) ? std::string(dtype_name(p.dtype)) + " is a block format" : std::to_string(int(p.dtype)) + " is not a vkgmm type") +
           " (x and y take f32, f16 or bf16)");
  // Block-format weights hold whole blocks along each expert row: d_model for w_up, d_ff for w_down.
  const std::tuple<const char*, DType, const char*, int64_t> weights[] = {
      {"weight_type", p.weight_type, "d_model", p.d_model}, {"down_weight_type", p.down_type(), "d_ff", p.d_ff}};
  for (const auto& [name, t, along, length] : weights) {
    if (!is_known(t)) refuse(std::string(name) + ": " + std::to_string(int(t)) + " is not a vkgmm type");
    const int64_t B = int64_t(block_elements(t));
    if (is_quantized(t) && length % B != 0)
      refuse(std::string(along) + " = " + std::to_string(length) + " must be a multiple of " + std::to_string(B) +
             ": " + name + " " + dtype_name(t) + " holds blocks of " + std::to_string(B) + " values along it");
  }
}

// An inner plan of the layer, made by `make`: its refusal names the layer and the pass it is for.
template <class Make>
auto part(const char* pass, Make&& make) {
  try {
    return make();
  } catch (const Error& e) {
    throw Error(e.status(), std::string(kOp) + ": " + pass + ": " + e.what());
  }
}

// Bias views given where the problem has no bias, and the forward's missing ones, under the layer's
// switches (the inner plans would name their own epilogue's).
void check_bias_views(const MoeLayerProblem& p, const MoeLayerOperands& ops, const MoeLayerGradients* g) {
  struct BiasRow {
    const char* name;
    bool on;
    const char *off, *needed;  // why a view is refused, and why the forward needs one
  };
  const BiasRow rows[] = {{"b_up", p.up_bias, "up_bias is off", "up_bias is on"},
                          {"b_down", p.down_bias, "down_bias is off", "down_bias is on"},
                          {"d_b_up", p.up_bias, "up_bias is off", nullptr},
                          {"d_b_down", p.down_bias, "down_bias is off", nullptr}};
  const BufferView views[] = {ops.b_up, ops.b_down, g ? g->d_b_up : BufferView{}, g ? g->d_b_down : BufferView{}};
  // The backward reads the saved pre-activations, the biases only where its passes say.
  check_table_presence(
      kOp, rows, views, std::size(rows), [&](size_t i) { return rows[i].on ? nullptr : rows[i].off; },
      [&](size_t i) { return !g && rows[i].on ? rows[i].needed : nullptr; });
}

}  // namespace

GmmProblem moe_layer_projection(const MoeLayerProblem& p, bool up) {
  GmmProblem g;
  const int64_t n_up = gated(p.activation) ? 2 * p.d_ff : p.d_ff;
  g.m = p.tokens;
  g.k = up ? p.d_model : p.d_ff;
  g.n = up ? n_up : p.d_model;
  g.num_rhs_groups = local_experts(p);
  g.group_offset = p.expert_offset;
  g.rhs_type = up ? p.weight_type : p.down_type();
  g.transpose_rhs = is_quantized(g.rhs_type) || p.transpose_weights;  // GGUF's [E, n, k]
  g.lhs_type = up ? p.dtype : DType::f32;
  g.out_type = up ? DType::f32 : p.dtype;
  g.existing_out = !up && p.accumulate;
  g.routing = {p.top_k, !up, !up, p.num_experts};
  // The forward keeps each slot's pre-activation in its workspace: the backward's input (the up
  // projection's activation derivative, the down projection's y(t, j) for d_weights), not recomputed.
  g.epilogue = {up ? p.up_bias : p.down_bias, up ? p.activation : Activation::none, !p.forward_only};
  return g;
}

namespace {

// logits = x @ router_w: one group of all T rows.
GmmProblem router_problem(const MoeLayerProblem& p) {
  return {.m = p.tokens, .k = p.d_model, .n = p.num_experts, .group_sizes = {int32_t(p.tokens)}, .lhs_type = p.dtype};
}

// d_x += d_logits @ router_w^T, added to the up projection's d_x: gmm adds existing_out only where it
// combines routed slots, so this is one: each token one slot of the one expert router_w^T (router_w [d, E]
// read as [1, n = d, k = E]), its weight 1 (the plan's constant ids and ones).
GmmProblem router_dx_problem(const MoeLayerProblem& p) {
  return {.m = p.tokens, .k = p.num_experts, .n = p.d_model, .num_rhs_groups = 1, .transpose_rhs = true,
          .out_type = p.dtype, .existing_out = true, .routing = {1, false, true, 1}};
}

// d_router_w [d, E] = x^T @ d_logits.
TgmmProblem router_weights_problem(const MoeLayerProblem& p) {
  return {.m = p.tokens, .k = p.d_model, .n = p.num_experts, .group_sizes = {int32_t(p.tokens)}, .lhs_mk = true,
          .lhs_type = p.dtype, .existing_out = p.accumulate};
}

TopKProblem routing_problem(const MoeLayerProblem& p) { return {p.tokens, p.num_experts, p.top_k, p.renormalize}; }

// The backward's plans (none with forward_only).
struct MoeLayerBackward {
  GmmBackwardPlan down_bw, up_bw;
  TopKBackwardPlan top_k_bw;
  TgmmPlan router_dw;
  GmmPlan router_dx;
};

std::optional<MoeLayerBackward> backward_parts(Context& ctx, const MoeLayerProblem& p) {
  if (p.forward_only) return std::nullopt;
  return MoeLayerBackward{
      part(kDownBackward, [&] { return PlanInternals::taking_routing(ctx, moe_layer_projection(p, false), GmmBackwardOptions{}); }),
      part(kUpBackward,
           [&] {
             return PlanInternals::taking_routing(ctx, moe_layer_projection(p, true), GmmBackwardOptions{p.accumulate});
           }),
      part(kTopKBackward, [&] { return TopKBackwardPlan(ctx, routing_problem(p)); }),
      part(kRouterDw, [&] { return TgmmPlan(ctx, router_weights_problem(p)); }),
      part(kRouterDx, [&] { return PlanInternals::part_of_another(ctx, router_dx_problem(p)); })};
}
}  // namespace

struct MoeLayerPlan::State {
  MoeLayerProblem problem;
  MoeLayerSizes sizes;
  GmmPlan router, up, down;
  TopKPlan top_k;
  std::optional<MoeLayerBackward> bw;
  // The workspace: what the forward saves, each forward plan's share, then the backward's words and each
  // backward plan's share.
  using Region = WorkspaceArena::Region;
  Region logits, ids, weights, hidden, d_hidden, d_weights, d_logits, up_ws, down_ws, down_bw_ws, up_bw_ws, router_dx_ws;
  VkDeviceSize total = 0;
  DeviceInfo info;
  Buffer own;  // none where the app gives every workspace (ContextOptions::app_workspaces)
  Buffer zeros, ones;  // router_dx's ids and weights, [T] each

  // The plans that use a workspace are parts of this one: each takes its share of the layer's, and
  // allocates none of its own.
  State(Context& ctx, const MoeLayerProblem& p)
      : problem(p),
        router(part(kRouter, [&] { return GmmPlan(ctx, router_problem(p)); })),
        up(part(kUp, [&] { return PlanInternals::part_of_another(ctx, moe_layer_projection(p, true)); })),
        down(part(kDown, [&] { return PlanInternals::taking_routing(ctx, moe_layer_projection(p, false), false); })),
        top_k(part(kTopK, [&] { return TopKPlan(ctx, routing_problem(p)); })),
        bw(backward_parts(ctx, p)) {}
};

namespace {
const MoeLayerProblem& checked(const MoeLayerProblem& p) {
  check_problem(p);
  return p;
}
}  // namespace

MoeLayerPlan::MoeLayerPlan(Context& ctx, const MoeLayerProblem& problem) {
  auto st = std::make_shared<State>(ctx, checked(problem));
  const MoeLayerProblem& p = st->problem;
  st->info = ctx.info();
  const VkDeviceSize T = VkDeviceSize(p.tokens), slots = T * VkDeviceSize(p.top_k);
  WorkspaceArena arena(st->info);
  st->logits = arena.take(T * VkDeviceSize(p.num_experts) * 4);
  st->ids = arena.take(slots * 4);
  st->weights = arena.take(slots * 4);
  st->hidden = arena.take(slots * VkDeviceSize(p.d_ff) * 4);
  st->up_ws = arena.take(st->up.workspace_bytes());
  st->down_ws = arena.take(st->down.workspace_bytes());
  if (st->bw) {
    const MoeLayerBackward& bw = *st->bw;
    st->d_hidden = arena.take(slots * VkDeviceSize(p.d_ff) * 4);
    st->d_weights = arena.take(slots * 4);
    st->d_logits = arena.take(T * VkDeviceSize(p.num_experts) * 4);
    st->down_bw_ws = arena.take(bw.down_bw.workspace_bytes());
    st->up_bw_ws = arena.take(bw.up_bw.workspace_bytes());
    st->router_dx_ws = arena.take(bw.router_dx.workspace_bytes());
  }
  st->total = arena.bytes();
  if (st->total && !ctx.options().app_workspaces) st->own = plan_buffer(ctx, st->total, "moe_layer: its workspace");
  if (st->bw) {
    // At least one word each: with no tokens the views are still given (and bound), of nothing to read.
    const VkDeviceSize count = std::max<VkDeviceSize>(T, 1);
    const std::vector<int32_t> zeros(count, 0);
    const std::vector<float> ones(count, 1.0f);
    st->zeros = plan_buffer(ctx, count * 4, "moe_layer: its zeros");
    st->zeros.upload(zeros.data(), count * 4);
    st->ones = plan_buffer(ctx, count * 4, "moe_layer: its ones");
    st->ones.upload(ones.data(), count * 4);
  }

  MoeLayerSizes& s = st->sizes;
  const OperandSizes up = st->up.sizes(), down = st->down.sizes();
  s.x = up.lhs;
  s.router_w = st->router.sizes().rhs;
  s.w_up = up.rhs;
  s.w_down = down.rhs;
  s.b_up = p.up_bias ? VkDeviceSize(local_experts(p) * st->up.problem().n) * 4 : 0;
  s.b_down = p.down_bias ? VkDeviceSize(local_experts(p) * p.d_model) * 4 : 0;
  s.y = down.out;
  s.workspace = st->total;
  state_ = std::move(st);
}

const MoeLayerProblem& MoeLayerPlan::problem() const { return state_->problem; }
MoeLayerSizes MoeLayerPlan::sizes() const { return state_->sizes; }
VkDeviceSize MoeLayerPlan::workspace_bytes() const { return state_->total; }

namespace {
// After a pass, before the next one reads what it wrote.
void between(VkCommandBuffer cb) {
  compute_barrier(cb, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

// The call's views against one another, before any pass is checked or recorded: the passes read and write
// them in an order of their own (x after top-k has written the workspace's ids, y before the backward reads
// x), so a written view (y, the workspace, status, a gradient) may share no byte with any other view the
// call takes. Null views (an absent bias) share none.
struct LayerRow {
  const char* name;
  bool written;
};
void check_layer_overlaps(const MoeLayerOperands& ops, const BufferView& work, const MoeLayerGradients* g) {
  std::vector<LayerRow> rows = {{"x", false},      {"router_w", false}, {"w_up", false},     {"w_down", false},
                                {"b_up", false},   {"b_down", false},   {"workspace", true}, {"status", true}};
  std::vector<BufferView> views = {ops.x, ops.router_w, ops.w_up, ops.w_down, ops.b_up, ops.b_down, work, ops.status};
  if (!g) {
    rows.push_back({"y", true});
    views.push_back(ops.y);
  } else {
    rows.push_back({"d_y", false});
    views.push_back(g->d_y);
    const std::pair<const char*, BufferView> written[] = {{"d_x", g->d_x},       {"d_router_w", g->d_router_w},
                                                          {"d_w_up", g->d_w_up}, {"d_b_up", g->d_b_up},
                                                          {"d_w_down", g->d_w_down}, {"d_b_down", g->d_b_down}};
    for (const auto& [name, view] : written) {
      rows.push_back({name, true});
      views.push_back(view);
    }
  }
  check_table_overlaps(kOp, rows.data(), views.data(), rows.size());
}

BufferView workspace_of(const MoeLayerOperands& ops, const Buffer& own, VkDeviceSize bytes, const DeviceInfo& info,
                        const GmmPlan& router) {
  check_workspace_view(kOp, ops.workspace, bytes, info);
  PlanInternals::check_in_buffer(router, kOp, "workspace", ops.workspace);  // the passes see slices of it
  if (!ops.workspace.buffer && bytes && !own.handle()) refuse_missing_workspace(kOp);
  if (!ops.workspace.buffer) return own.handle() ? own.view() : BufferView{};
  return ops.workspace;
}
}  // namespace

void MoeLayerPlan::record_forward(VkCommandBuffer cb, const MoeLayerOperands& ops) const {
  const State& st = live_state(state_, kOp);
  if (cb == VK_NULL_HANDLE) refuse("command buffer is VK_NULL_HANDLE");
  const BufferView work = workspace_of(ops, st.own, st.total, st.info, st.router);
  check_layer_overlaps(ops, work, nullptr);
  check_bias_views(st.problem, ops, nullptr);
  const BufferView logits = st.logits.in(work), ids = st.ids.in(work), weights = st.weights.in(work);
  const BufferView hidden = st.hidden.in(work);
  GmmOperands r;
  r.lhs = ops.x, r.rhs = ops.router_w, r.out = logits;
  TopKOperands k{logits, ids, weights};
  GmmOperands up;
  up.lhs = ops.x, up.rhs = ops.w_up, up.out = hidden, up.ids = ids, up.bias = ops.b_up;
  up.workspace = st.up_ws.in(work), up.status = ops.status;
  GmmOperands down;
  down.lhs = hidden, down.rhs = ops.w_down, down.out = ops.y, down.ids = ids, down.weights = weights;
  down.bias = ops.b_down, down.workspace = st.down_ws.in(work);
  if (st.problem.accumulate) down.existing_out = ops.y;
  // Every view checked before anything is recorded. One routing build for the layer: the down projection
  // takes the up projection's order of the slots.
  const RoutingSource routing = PlanInternals::routing_source(st.up, up.workspace);
  check_as_part(kOp, kRouter, {{"lhs", "x"}, {"rhs", "router_w"}}, [&] { st.router.check(r); });
  check_as_part(kOp, kTopK, {}, [&] { st.top_k.check(k); });
  check_as_part(kOp, kUp, {{"lhs", "x"}, {"rhs", "w_up"}, {"bias", "b_up"}, {"status", "status"}}, [&] { st.up.check(up); });
  check_as_part(kOp, kDown, {{"rhs", "w_down"}, {"out", "y"}, {"existing_out", "y"}, {"bias", "b_down"}},
             [&] { PlanInternals::check_routed_from(st.down, down, routing); });
  st.router.record(cb, r);
  between(cb);
  st.top_k.record(cb, k);
  between(cb);
  st.up.record(cb, up);
  between(cb);
  PlanInternals::record_routed_from(st.down, cb, down, routing);
}

void MoeLayerPlan::record_backward(VkCommandBuffer cb, const MoeLayerOperands& ops, const MoeLayerGradients& g) const {
  const State& st = live_state(state_, kOp);
  if (!st.bw) refuse("record_backward: the plan was made with forward_only (the forward alone)");
  const MoeLayerBackward& bw = *st.bw;
  if (cb == VK_NULL_HANDLE) refuse("command buffer is VK_NULL_HANDLE");
  const BufferView work = workspace_of(ops, st.own, st.total, st.info, st.router);
  check_layer_overlaps(ops, work, &g);
  check_bias_views(st.problem, ops, &g);
  const BufferView logits = st.logits.in(work), ids = st.ids.in(work), weights = st.weights.in(work);
  const BufferView hidden = st.hidden.in(work), d_hidden = st.d_hidden.in(work);
  const BufferView d_weights = st.d_weights.in(work), d_logits = st.d_logits.in(work);
  GmmBackwardOperands down;
  down.pre_activation = st.down.saved_pre_activation(st.down_ws.in(work));
  down.lhs = hidden, down.rhs = ops.w_down, down.d_out = g.d_y, down.d_lhs = d_hidden, down.d_rhs = g.d_w_down;
  down.ids = ids, down.weights = weights, down.bias = ops.b_down, down.d_bias = g.d_b_down, down.d_weights = d_weights;
  down.workspace = st.down_bw_ws.in(work), down.status = ops.status;
  GmmBackwardOperands up;
  up.pre_activation = st.up.saved_pre_activation(st.up_ws.in(work));
  up.lhs = ops.x, up.rhs = ops.w_up, up.d_out = d_hidden, up.d_lhs = g.d_x, up.d_rhs = g.d_w_up;
  up.ids = ids, up.bias = ops.b_up, up.d_bias = g.d_b_up, up.workspace = st.up_bw_ws.in(work);
  const TopKBackwardOperands k{logits, ids, weights, d_weights, d_logits};
  TgmmOperands dw;
  dw.lhs = ops.x, dw.rhs = d_logits, dw.out = g.d_router_w;
  if (st.problem.accumulate) dw.existing_out = g.d_router_w;
  GmmOperands dx;
  dx.lhs = d_logits, dx.rhs = ops.router_w, dx.out = g.d_x, dx.existing_out = g.d_x;
  dx.ids = st.zeros.view(), dx.weights = st.ones.view();
  dx.workspace = st.router_dx_ws.in(work);
  // Both backwards take the forward's routing, saved in the up projection's words: no build of their own.
  const RoutingSource routing = PlanInternals::routing_source(st.up, st.up_ws.in(work));
  check_as_part(kOp, kDownBackward,
             {{"rhs", "w_down"}, {"d_out", "d_y"}, {"d_rhs", "d_w_down"}, {"bias", "b_down"}, {"d_bias", "d_b_down"},
              {"status", "status"}},
             [&] { PlanInternals::check_backward(bw.down_bw, down, routing); });
  check_as_part(kOp, kUpBackward,
             {{"lhs", "x"}, {"rhs", "w_up"}, {"d_lhs", "d_x"}, {"d_rhs", "d_w_up"}, {"bias", "b_up"}, {"d_bias", "d_b_up"}},
             [&] { PlanInternals::check_backward(bw.up_bw, up, routing); });
  check_as_part(kOp, kTopKBackward, {}, [&] { bw.top_k_bw.check(k); });
  check_as_part(kOp, kRouterDw, {{"lhs", "x"}, {"out", "d_router_w"}, {"existing_out", "d_router_w"}},
             [&] { bw.router_dw.check(dw); });
  check_as_part(kOp, kRouterDx, {{"rhs", "router_w"}, {"out", "d_x"}, {"existing_out", "d_x"}}, [&] { bw.router_dx.check(dx); });
  between(cb);  // the forward's saved words
  PlanInternals::record_backward(bw.down_bw, cb, down, routing);
  between(cb);
  // Passes that read the workspace through texel views of the whole buffer come before the next pass's
  // writes with a barrier, though their words differ.
  PlanInternals::record_backward(bw.up_bw, cb, up, routing);
  between(cb);
  bw.top_k_bw.record(cb, k);
  between(cb);
  bw.router_dw.record(cb, dw);
  between(cb);
  bw.router_dx.record(cb, dx);
}

}  // namespace vkgmm
