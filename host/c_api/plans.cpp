// C API: gmm, tgmm, backward and top-k plans — C problem structs to C++ problems, then the C++ plans as they are.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "../context_impl.hpp"
#include "../operand_table.hpp"
#include "../problem_checks.hpp"
#include "../top_k_operands.hpp"
#include "c_api.hpp"

using vkgmm::c_api::guarded;
using vkgmm::c_api::read_struct;
using vkgmm::c_api::require;
using vkgmm::c_api::to_cpp;
using vkgmm::c_api::write_struct;
using vkgmm::c_api::bad;
using vkgmm::c_api::raw_enum;
using vkgmm::c_api::schedule;
using vkgmm::c_api::view;
using vkgmm::c_api::tri_state;
using vkgmm::c_api::same_context;
using vkgmm::c_api::dtype;
using vkgmm::c_api::activation;
using vkgmm::c_api::create_plan_with;
using vkgmm::c_api::plan_sizes_as;

namespace {

using vkgmm::Error;
using vkgmm::Status;

std::vector<int32_t> group_sizes(const char* op, const int32_t* sizes, int64_t count) {
  if (count < 0) bad(op, "num_groups = " + std::to_string(count) + " must be >= 0");
  if (count > 0 && !sizes) bad(op, "group_sizes is NULL with num_groups = " + std::to_string(count));
  vkgmm::check_group_count(op, "num_groups", count);  // before the copy: no read past a count too large
  return count ? std::vector<int32_t>(sizes, sizes + count) : std::vector<int32_t>{};
}

vkgmm::TilingChoice tiling(vkgmm_tiling fixed, vkgmm_tiling_fn fn, void* user) {
  if (fn) {
    return vkgmm::TilingChoice::of(vkgmm::TilingFn(
        [fn, user](int64_t m, int64_t k, int64_t n) -> std::optional<vkgmm::Tiling> {
          vkgmm_tiling t{0, 0, 0};
          if (!fn(m, k, n, &t, user)) return std::nullopt;
          return vkgmm::Tiling{t.tm, t.tk, t.tn};
        }));
  }
  if (fixed.tm == 0 && fixed.tk == 0 && fixed.tn == 0) return vkgmm::TilingChoice::automatic();
  return vkgmm::TilingChoice::of(vkgmm::Tiling{fixed.tm, fixed.tk, fixed.tn});
}

// Zero means "the default" in C; the C++ default is -1. A negative C value is an error, not a default.
int64_t count_or_default(const char* op, const char* name, int64_t v) {
  if (v < 0) bad(op, std::string(name) + " = " + std::to_string(v) + " must be >= 0 (0: the default)");
  return v == 0 ? -1 : v;
}


template <typename Plan>
vkgmm_operand_sizes sizes(const Plan& plan) {
  const vkgmm::OperandSizes s = plan.sizes();
  return {sizeof(vkgmm_operand_sizes), s.lhs, s.rhs, s.out, s.existing_out, plan.metadata_bytes(),
          plan.workspace_bytes()};
}

vkgmm::GmmOperands gmm_ops(const vkgmm_gmm_operands* ops) {
  return to_cpp(read_struct(ops, "ops", "vkgmm_gmm_operands"));
}

vkgmm::TgmmOperands tgmm_ops(const vkgmm_tgmm_operands* ops) {
  return to_cpp(read_struct(ops, "ops", "vkgmm_tgmm_operands"));
}

vkgmm::GmmBackwardOperands backward_ops(const vkgmm_gmm_backward_operands* ops) {
  const vkgmm_gmm_backward_operands o = read_struct(ops, "ops", "vkgmm_gmm_backward_operands");
  vkgmm::GmmBackwardOperands b;
  b.lhs = view(o.lhs), b.rhs = view(o.rhs), b.d_out = view(o.d_out), b.d_lhs = view(o.d_lhs), b.d_rhs = view(o.d_rhs);
  b.group_sizes = view(o.group_sizes), b.workspace = view(o.workspace), b.status = view(o.status);
  b.ids = view(o.ids), b.weights = view(o.weights), b.bias = view(o.bias);
  b.d_bias = view(o.d_bias), b.d_weights = view(o.d_weights);
  b.pre_activation = view(o.pre_activation);
  return b;
}

vkgmm::TopKOperands top_k_ops(const vkgmm_top_k_operands* ops) {
  return vkgmm::TokenOperandTable<vkgmm::TopKOperands>::from_c(read_struct(ops, "ops", "vkgmm_top_k_operands"), view);
}

vkgmm::TopKBackwardOperands top_k_backward_ops(const vkgmm_top_k_backward_operands* ops) {
  return vkgmm::TokenOperandTable<vkgmm::TopKBackwardOperands>::from_c(
      read_struct(ops, "ops", "vkgmm_top_k_backward_operands"), view);
}

// The bodies every plan kind shares; the C entry points below only name their types.
template <typename Handle, typename Plan, typename CProblem>
vkgmm_status create_plan(vkgmm_context* ctx, const CProblem* problem, const char* problem_name,
                         const char* type_name, Handle** out) {
  return create_plan_with(ctx, out, [&](vkgmm::Context& c) {
    return Plan(c, to_cpp(read_struct(problem, problem_name, type_name)));
  });
}

template <typename Handle>
vkgmm_status plan_sizes(const Handle* plan, vkgmm_operand_sizes* out) {
  return plan_sizes_as(plan, out, "vkgmm_operand_sizes", [](const auto& p) { return sizes(p); });
}

template <typename Handle>
vkgmm_status plan_tiling(const Handle* plan, vkgmm_tiling* out) {
  return guarded([&] {
    require(plan, "plan");
    require(out, "out");
    const vkgmm::Tiling t = plan->plan.tiling();
    *out = {t.tm, t.tk, t.tn};
  });
}

template <typename Handle>
vkgmm_status plan_schedule(const Handle* plan, vkgmm_schedule* out) {
  return guarded([&] {
    require(plan, "plan");
    require(out, "out");
    *out = static_cast<vkgmm_schedule>(plan->plan.schedule());  // the values match (vkgmm.h)
  });
}

template <typename Handle, typename COps, typename ToCpp>
vkgmm_status plan_record(const Handle* plan, VkCommandBuffer cmd, const COps* ops, ToCpp to_ops) {
  return guarded([&] {
    require(plan, "plan");
    plan->plan.record(cmd, to_ops(ops));
  });
}

template <typename Handle, typename COps, typename ToCpp>
vkgmm_status plan_run(vkgmm_context* ctx, const Handle* plan, const COps* ops, ToCpp to_ops) {
  return guarded([&] {
    require(plan, "plan");
    const auto o = to_ops(ops);
    same_context(ctx, plan->owner);
    if constexpr (requires { plan->plan.check(o); })
      plan->plan.check(o);  // refuse bad views before a command buffer is even allocated
    ctx->ctx.submit_and_wait([&](VkCommandBuffer cb) { plan->plan.record(cb, o); });
  });
}

}  // namespace

namespace vkgmm::c_api {

namespace {

// device_group_count and expected_group_rows, checked under their C names (the C++ checks name the C++ fields).
template <typename C>
DeviceGroupSizes device_group_sizes(const char* op, const C& c) {
  if (c.device_group_count < 0)
    bad(op, "device_group_count = " + std::to_string(c.device_group_count) + " must be >= 0 (0: sizes on the host)");
  if (c.expected_group_rows < 0)
    bad(op, "expected_group_rows = " + std::to_string(c.expected_group_rows) + " must be >= 0 (0: m spread over the groups)");
  if (c.device_group_count == 0) {
    if (c.expected_group_rows != 0)
      bad(op, "expected_group_rows = " + std::to_string(c.expected_group_rows) +
                  " is a hint for device group sizes, but device_group_count = 0");
    return {};
  }
  if (c.num_groups != 0 || c.group_sizes)
    bad(op, "device_group_count = " + std::to_string(c.device_group_count) +
                ": the group sizes are on the device; leave group_sizes NULL and num_groups 0");
  return {c.device_group_count, c.expected_group_rows};
}

// top_k, lhs_per_slot, combine and num_experts, checked under their C names (as device_group_sizes).
Routing routing(const char* op, const vkgmm_gmm_problem& c) {
  if (c.top_k < 0) bad(op, "top_k = " + std::to_string(c.top_k) + " must be >= 0 (0: no routing)");
  if (c.num_experts < 0)
    bad(op, "num_experts = " + std::to_string(c.num_experts) + " must be >= 0 (0: unknown)");
  if (c.top_k == 0) {
    const char* set = c.lhs_per_slot ? "lhs_per_slot" : c.combine ? "combine" : c.num_experts ? "num_experts" : nullptr;
    if (set) bad(op, std::string(set) + " is set, but top_k = 0 (no routing by expert ids)");
    return {};
  }
  const std::string k = "top_k = " + std::to_string(c.top_k);
  if (c.num_groups != 0 || c.group_sizes || c.device_group_count != 0)
    bad(op, k + ": the rows are routed by ids; leave group_sizes NULL, num_groups 0 and device_group_count 0");
  // num_rhs_groups 0 is "all the rest" as without routing, the rest of num_experts here; an app that means
  // a shard of no local experts writes -1 (E_local = 0 has no other spelling in C).
  if (c.num_rhs_groups == 0 && c.num_experts == 0)
    bad(op, k + ": num_rhs_groups (E_local, the experts rhs holds) is required with routing when num_experts is 0");
  if (c.num_rhs_groups < -1)
    bad(op, k + ": num_rhs_groups = " + std::to_string(c.num_rhs_groups) +
                " must be >= -1 (E_local, the experts rhs holds; 0: num_experts - group_offset; -1: none)");
  Routing r;
  r.top_k = c.top_k;
  r.lhs_per_slot = c.lhs_per_slot != 0;
  r.combine = c.combine != 0;
  r.num_experts = c.num_experts;
  return r;
}

Epilogue epilogue(const char* op, const vkgmm_gmm_problem& c) {
  Epilogue e;
  e.bias = c.bias != 0;
  e.activation = activation(op, c.activation);
  e.save_pre_activation = c.save_pre_activation != 0;
  if (c.reserved_tail != 0) bad(op, "reserved_tail = " + std::to_string(c.reserved_tail) + " must be 0");
  return e;
}

// The fields gmm's and tgmm's C problems share, by the same names, into the C++ problem P.
template <typename P, typename C>
P common_fields(const char* op, const C& c) {
  if (c.reserved != 0) bad(op, "reserved = " + std::to_string(c.reserved) + " must be 0");
  P p;
  p.m = c.m;
  p.k = c.k;
  p.n = c.n;
  p.group_sizes = group_sizes(op, c.group_sizes, c.num_groups);
  p.device_group_sizes = device_group_sizes(op, c);
  p.group_offset = c.group_offset;
  p.lhs_type = dtype(op, "lhs_type", c.lhs_type);
  p.rhs_type = dtype(op, "rhs_type", c.rhs_type);
  p.out_type = dtype(op, "out_type", c.out_type);
  p.existing_out = c.existing_out != 0;
  p.tiling = tiling(c.tiling, c.tiling_fn, c.tiling_user);
  p.schedule = schedule(op, c.schedule);
  return p;
}

}  // namespace

GmmProblem to_cpp(const vkgmm_gmm_problem& c) {
  GmmProblem p = common_fields<GmmProblem>("gmm", c);
  p.transpose_rhs = c.transpose_rhs != 0;
  p.routing = routing("gmm", c);
  if (p.routing.top_k == 0)
    p.num_rhs_groups = count_or_default("gmm", "num_rhs_groups", c.num_rhs_groups);
  else if (c.num_rhs_groups == -1)
    p.num_rhs_groups = 0;  // a shard of no local expert
  else if (c.num_rhs_groups == 0)
    p.num_rhs_groups = std::max<int64_t>(c.num_experts - c.group_offset, 0);  // the rest of the experts
  else
    p.num_rhs_groups = c.num_rhs_groups;
  p.epilogue = epilogue("gmm", c);
  return p;
}

GmmOperands to_cpp(const vkgmm_gmm_operands& o) {
  GmmOperands ops;
  copy_operands(ops, o, view);
  return ops;
}

TgmmOperands to_cpp(const vkgmm_tgmm_operands& o) {
  TgmmOperands ops;
  copy_operands(ops, o, view);
  return ops;
}

TgmmProblem to_cpp(const vkgmm_tgmm_problem& c) {
  TgmmProblem p = common_fields<TgmmProblem>("tgmm", c);
  p.num_actual_groups = count_or_default("tgmm", "num_actual_groups", c.num_actual_groups);
  p.lhs_mk = c.lhs_mk != 0;
  p.out_nk = c.out_nk != 0;
  return p;
}

TopKProblem to_cpp(const vkgmm_top_k_problem& c) {
  if (c.reserved_tail != 0)
    bad("vkgmm_top_k_problem", "reserved_tail = " + std::to_string(c.reserved_tail) + " must be 0");
  return {c.tokens, c.experts, c.top_k, tri_state(c.renormalize).value_or(TopKProblem{}.renormalize)};
}

TopKBackwardOptions to_cpp(const vkgmm_top_k_backward_options& c) {
  if (c.reserved != 0) bad("top_k_backward", "reserved = " + std::to_string(c.reserved) + " must be 0");
  TopKBackwardOptions o;
  o.accumulate = c.accumulate != 0;
  return o;
}

}  // namespace vkgmm::c_api

// What every plan kind's handle does the same way: destroy, record into the caller's command buffer, and run
// (record, submit and wait), the C operands read by to_ops. One definition for the five kinds' entry points.
#define VKGMM_C_PLAN_ENTRY_POINTS(kind, to_ops)                                                              \
  void vkgmm_##kind##_plan_destroy(vkgmm_##kind##_plan* plan) { delete plan; }                               \
  vkgmm_status vkgmm_##kind##_plan_record(const vkgmm_##kind##_plan* plan, VkCommandBuffer cmd,              \
                                          const vkgmm_##kind##_operands* ops) {                              \
    return plan_record(plan, cmd, ops, to_ops);                                                              \
  }                                                                                                          \
  vkgmm_status vkgmm_##kind##_plan_run(vkgmm_context* ctx, const vkgmm_##kind##_plan* plan,                  \
                                       const vkgmm_##kind##_operands* ops) {                                 \
    return plan_run(ctx, plan, ops, to_ops);                                                                 \
  }

extern "C" {

VKGMM_C_PLAN_ENTRY_POINTS(gmm, gmm_ops)
VKGMM_C_PLAN_ENTRY_POINTS(tgmm, tgmm_ops)
VKGMM_C_PLAN_ENTRY_POINTS(gmm_backward, backward_ops)
VKGMM_C_PLAN_ENTRY_POINTS(top_k, top_k_ops)
VKGMM_C_PLAN_ENTRY_POINTS(top_k_backward, top_k_backward_ops)

// ----- gmm ---------------------------------------------------------------------------------------------

vkgmm_status vkgmm_gmm_plan_create(vkgmm_context* ctx, const vkgmm_gmm_problem* problem, vkgmm_gmm_plan** out) {
  return create_plan<vkgmm_gmm_plan, vkgmm::GmmPlan>(ctx, problem, "problem", "vkgmm_gmm_problem", out);
}

vkgmm_status vkgmm_gmm_plan_sizes(const vkgmm_gmm_plan* plan, vkgmm_operand_sizes* out) { return plan_sizes(plan, out); }

vkgmm_status vkgmm_gmm_plan_tiling(const vkgmm_gmm_plan* plan, vkgmm_tiling* out) { return plan_tiling(plan, out); }

vkgmm_status vkgmm_gmm_plan_schedule(const vkgmm_gmm_plan* plan, vkgmm_schedule* out) { return plan_schedule(plan, out); }

vkgmm_status vkgmm_gmm_plan_saved_pre_activation(const vkgmm_gmm_plan* plan, vkgmm_buffer_view workspace,
                                                 vkgmm_buffer_view* out) {
  return guarded([&] {
    require(plan, "plan");
    require(out, "out");
    const vkgmm::BufferView v = plan->plan.saved_pre_activation(view(workspace));
    *out = {v.buffer, v.offset, v.size};
  });
}

// ----- tgmm --------------------------------------------------------------------------------------------

vkgmm_status vkgmm_tgmm_plan_create(vkgmm_context* ctx, const vkgmm_tgmm_problem* problem, vkgmm_tgmm_plan** out) {
  return create_plan<vkgmm_tgmm_plan, vkgmm::TgmmPlan>(ctx, problem, "problem", "vkgmm_tgmm_problem", out);
}

vkgmm_status vkgmm_tgmm_plan_sizes(const vkgmm_tgmm_plan* plan, vkgmm_operand_sizes* out) { return plan_sizes(plan, out); }

vkgmm_status vkgmm_tgmm_plan_tiling(const vkgmm_tgmm_plan* plan, vkgmm_tiling* out) { return plan_tiling(plan, out); }

vkgmm_status vkgmm_tgmm_plan_schedule(const vkgmm_tgmm_plan* plan, vkgmm_schedule* out) { return plan_schedule(plan, out); }

// ----- backward ----------------------------------------------------------------------------------------

vkgmm_status vkgmm_gmm_backward_plan_create(vkgmm_context* ctx, const vkgmm_gmm_problem* forward,
                                            vkgmm_gmm_backward_plan** out) {
  return create_plan<vkgmm_gmm_backward_plan, vkgmm::GmmBackwardPlan>(ctx, forward, "forward", "vkgmm_gmm_problem", out);
}

vkgmm_status vkgmm_gmm_backward_plan_create_with_options(vkgmm_context* ctx, const vkgmm_gmm_problem* forward,
                                                         const vkgmm_gmm_backward_options* options,
                                                         vkgmm_gmm_backward_plan** out) {
  return create_plan_with(ctx, out, [&](vkgmm::Context& cpp) {
    const vkgmm_gmm_problem c = read_struct(forward, "forward", "vkgmm_gmm_problem");
    vkgmm::GmmBackwardOptions o;
    if (options) {
      const vkgmm_gmm_backward_options copy = read_struct(options, "options", "vkgmm_gmm_backward_options");
      if (copy.reserved_tail != 0) bad("options", "reserved_tail must be 0");
      o.accumulate = copy.accumulate != 0;
    }
    return vkgmm::GmmBackwardPlan(cpp, to_cpp(c), o);
  });
}

vkgmm_status vkgmm_gmm_backward_plan_sizes(const vkgmm_gmm_backward_plan* plan, vkgmm_gmm_backward_sizes* out) {
  return plan_sizes_as(plan, out, "vkgmm_gmm_backward_sizes", [](const vkgmm::GmmBackwardPlan& p) {
    const vkgmm::GmmBackwardSizes s = p.sizes();
    return vkgmm_gmm_backward_sizes{sizeof(vkgmm_gmm_backward_sizes), s.lhs, s.rhs, s.d_out, s.d_lhs, s.d_rhs,
                                    p.metadata_bytes(), p.workspace_bytes(), s.ids, s.weights, s.bias, s.d_bias,
                                    s.d_weights, s.pre_activation};
  });
}

// ----- top-k routing -----------------------------------------------------------------------------------

vkgmm_status vkgmm_top_k_plan_create(vkgmm_context* ctx, const vkgmm_top_k_problem* problem, vkgmm_top_k_plan** out) {
  return create_plan<vkgmm_top_k_plan, vkgmm::TopKPlan>(ctx, problem, "problem", "vkgmm_top_k_problem", out);
}

vkgmm_status vkgmm_top_k_plan_sizes(const vkgmm_top_k_plan* plan, vkgmm_top_k_sizes* out) {
  return plan_sizes_as(plan, out, "vkgmm_top_k_sizes", [](const vkgmm::TopKPlan& p) {
    const vkgmm::TopKSizes s = p.sizes();
    return vkgmm_top_k_sizes{sizeof(vkgmm_top_k_sizes), s.logits, s.ids, s.weights};
  });
}

// ----- top-k routing's backward -------------------------------------------------------------------------

vkgmm_status vkgmm_top_k_backward_plan_create(vkgmm_context* ctx, const vkgmm_top_k_problem* forward,
                                              const vkgmm_top_k_backward_options* options,
                                              vkgmm_top_k_backward_plan** out) {
  return create_plan_with(ctx, out, [&](vkgmm::Context& cpp) {
    const vkgmm::TopKProblem p = to_cpp(read_struct(forward, "forward", "vkgmm_top_k_problem"));
    const vkgmm::TopKBackwardOptions o =
        options ? to_cpp(read_struct(options, "options", "vkgmm_top_k_backward_options")) : vkgmm::TopKBackwardOptions{};
    return vkgmm::TopKBackwardPlan(cpp, p, o);
  });
}

vkgmm_status vkgmm_top_k_backward_plan_sizes(const vkgmm_top_k_backward_plan* plan, vkgmm_top_k_backward_sizes* out) {
  return plan_sizes_as(plan, out, "vkgmm_top_k_backward_sizes", [](const vkgmm::TopKBackwardPlan& p) {
    const vkgmm::TopKBackwardSizes s = p.sizes();
    return vkgmm_top_k_backward_sizes{sizeof(vkgmm_top_k_backward_sizes), s.logits, s.ids, s.weights, s.d_weights,
                                      s.d_logits};
  });
}

}  // extern "C"
