// C API: the MoE layer's plan (vkgmm_moe.h), its C structs to vkgmm::MoeLayerPlan's.
#include "c_api.hpp"

using namespace vkgmm::c_api;

vkgmm::MoeLayerProblem vkgmm::c_api::to_cpp(const vkgmm_moe_layer_problem& c) {
  const char* op = "moe_layer";
  if (c.reserved_tail != 0) bad(op, "reserved_tail must be 0");
  vkgmm::MoeLayerProblem p;
  p.tokens = c.tokens, p.d_model = c.d_model, p.d_ff = c.d_ff, p.num_experts = c.num_experts, p.top_k = c.top_k;
  // 0 as C++'s default: every expert from expert_offset on.
  p.expert_offset = c.expert_offset, p.local_experts = c.local_experts == 0 ? p.local_experts : c.local_experts;
  p.renormalize = tri_state(c.renormalize).value_or(p.renormalize);
  p.activation = activation(op, c.activation);
  p.up_bias = c.up_bias != 0, p.down_bias = c.down_bias != 0;
  p.dtype = dtype(op, "dtype", c.dtype);
  p.weight_type = dtype(op, "weight_type", c.weight_type);
  if (c.has_down_weight_type) p.down_weight_type = dtype(op, "down_weight_type", c.down_weight_type);
  p.accumulate = c.accumulate != 0;
  p.transpose_weights = c.transpose_weights != 0;
  p.forward_only = c.forward_only != 0;
  return p;
}

namespace {

vkgmm::MoeLayerOperands operands(const vkgmm_moe_layer_operands* ops) {
  const vkgmm_moe_layer_operands o = read_struct(ops, "ops", "vkgmm_moe_layer_operands");
  vkgmm::MoeLayerOperands m;
  m.x = view(o.x), m.router_w = view(o.router_w), m.w_up = view(o.w_up), m.w_down = view(o.w_down);
  m.b_up = view(o.b_up), m.b_down = view(o.b_down), m.y = view(o.y), m.workspace = view(o.workspace);
  m.status = view(o.status);
  return m;
}

vkgmm::MoeLayerGradients gradients(const vkgmm_moe_layer_gradients* grads) {
  const vkgmm_moe_layer_gradients g = read_struct(grads, "grads", "vkgmm_moe_layer_gradients");
  vkgmm::MoeLayerGradients m;
  m.d_y = view(g.d_y), m.d_x = view(g.d_x), m.d_router_w = view(g.d_router_w), m.d_w_up = view(g.d_w_up);
  m.d_b_up = view(g.d_b_up), m.d_w_down = view(g.d_w_down), m.d_b_down = view(g.d_b_down);
  return m;
}

}  // namespace

vkgmm_status vkgmm_moe_layer_plan_create(vkgmm_context* ctx, const vkgmm_moe_layer_problem* problem,
                                         vkgmm_moe_layer_plan** out) {
  return create_plan_with(ctx, out, [&](vkgmm::Context& cpp) {
    return vkgmm::MoeLayerPlan(cpp, to_cpp(read_struct(problem, "problem", "vkgmm_moe_layer_problem")));
  });
}

void vkgmm_moe_layer_plan_destroy(vkgmm_moe_layer_plan* plan) { delete plan; }

vkgmm_status vkgmm_moe_layer_plan_sizes(const vkgmm_moe_layer_plan* plan, vkgmm_moe_layer_sizes* out) {
  return plan_sizes_as(plan, out, "vkgmm_moe_layer_sizes", [](const vkgmm::MoeLayerPlan& p) {
    const vkgmm::MoeLayerSizes s = p.sizes();
    return vkgmm_moe_layer_sizes{sizeof(vkgmm_moe_layer_sizes), s.x, s.router_w, s.w_up, s.w_down, s.b_up, s.b_down,
                                 s.y, s.workspace};
  });
}

vkgmm_status vkgmm_moe_layer_plan_record_forward(const vkgmm_moe_layer_plan* plan, VkCommandBuffer cmd,
                                                 const vkgmm_moe_layer_operands* ops) {
  return guarded([&] {
    require(plan, "plan");
    plan->plan.record_forward(cmd, operands(ops));
  });
}

vkgmm_status vkgmm_moe_layer_plan_record_backward(const vkgmm_moe_layer_plan* plan, VkCommandBuffer cmd,
                                                  const vkgmm_moe_layer_operands* ops,
                                                  const vkgmm_moe_layer_gradients* grads) {
  return guarded([&] {
    require(plan, "plan");
    plan->plan.record_backward(cmd, operands(ops), gradients(grads));
  });
}

vkgmm_status vkgmm_moe_layer_plan_run(vkgmm_context* ctx, const vkgmm_moe_layer_plan* plan,
                                      const vkgmm_moe_layer_operands* ops, const vkgmm_moe_layer_gradients* grads) {
  return guarded([&] {
    require(plan, "plan");
    same_context(ctx, plan->owner);
    const vkgmm::MoeLayerOperands o = operands(ops);
    const std::optional<vkgmm::MoeLayerGradients> g =
        grads ? std::optional<vkgmm::MoeLayerGradients>(gradients(grads)) : std::nullopt;
    ctx->ctx.submit_and_wait([&](VkCommandBuffer cb) {
      plan->plan.record_forward(cb, o);
      if (g) plan->plan.record_backward(cb, o, *g);
    });
  });
}
