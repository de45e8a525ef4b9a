// vkgmm.moe_layer and moe_layer_vjp: vkgmm::MoeLayerPlan on vkgmm.Arrays, the forward (and the backward)
// recorded into one command buffer and submitted once.
#include "moe_layer.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "array.hpp"
#include "errors.hpp"
#include "gil.hpp"
#include "plans.hpp"
#include "vkgmm/moe_layer.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

struct MoeLayerPy {
  ContextRef ctx;
  std::unique_ptr<vkgmm::MoeLayerPlan> plan;
};

MoeLayerPy make_plan(ContextRef ctx, int64_t tokens, int64_t d_model, int64_t d_ff, int64_t num_experts, int64_t top_k,
                     int64_t expert_offset, int64_t local_experts, bool renormalize, const py::object& activation,
                     bool up_bias, bool down_bias, const std::string& dtype, const std::string& weight_type,
                     const std::string& down_weight_type, bool accumulate, bool transpose_weights,
                     bool forward_only) {
  vkgmm::MoeLayerProblem p;
  p.tokens = tokens, p.d_model = d_model, p.d_ff = d_ff, p.num_experts = num_experts, p.top_k = top_k;
  p.expert_offset = expert_offset, p.local_experts = local_experts, p.renormalize = renormalize;
  p.activation = activation_of(activation);
  p.up_bias = up_bias, p.down_bias = down_bias;
  p.dtype = dtype_of(dtype, "x");
  p.weight_type = dtype_of(weight_type, "w_up");
  p.down_weight_type = dtype_of(down_weight_type, "w_down");
  p.accumulate = accumulate;
  p.transpose_weights = transpose_weights;
  p.forward_only = forward_only;
  MoeLayerPy r;
  r.ctx = ctx;
  ReleaseGil unlocked;
  r.plan = std::make_unique<vkgmm::MoeLayerPlan>(*ctx, p);
  return r;
}

vkgmm::BufferView view_of(const Array* a) { return a ? a->view() : vkgmm::BufferView{}; }

// The forward into y, and with d_y the backward into the gradients given, in one submit.
void run_layer(const MoeLayerPy& m, const Array& x, const Array& router_w, const Array& w_up, const Array& w_down,
               const Array* b_up, const Array* b_down, const Array& y, const Array* d_y, const Array* d_x,
               const Array* d_router_w, const Array* d_w_up, const Array* d_b_up, const Array* d_w_down,
               const Array* d_b_down) {
  vkgmm::MoeLayerOperands ops;
  ops.x = x.view(), ops.router_w = router_w.view(), ops.w_up = w_up.view(), ops.w_down = w_down.view();
  ops.b_up = view_of(b_up), ops.b_down = view_of(b_down), ops.y = y.view();
  // A workspace of the run's own: one plan may run from several threads at once.
  vkgmm::Buffer workspace;
  if (m.plan->workspace_bytes()) {
    workspace = m.ctx->create_buffer(m.plan->workspace_bytes());
    ops.workspace = workspace.view();
  }
  vkgmm::MoeLayerGradients g;
  if (d_y) {
    g.d_y = d_y->view(), g.d_x = view_of(d_x), g.d_router_w = view_of(d_router_w);
    g.d_w_up = view_of(d_w_up), g.d_b_up = view_of(d_b_up), g.d_w_down = view_of(d_w_down), g.d_b_down = view_of(d_b_down);
  }
  run(*m.ctx, [&](VkCommandBuffer cb) {
    m.plan->record_forward(cb, ops);
    if (d_y) m.plan->record_backward(cb, ops, g);
  });
}

}  // namespace

void bind_moe_layer(py::module_& m) {
  using py::arg;
  py::class_<MoeLayerPy>(m, "_MoeLayerPlan")
      .def(py::init(&make_plan), arg("context"), arg("tokens"), arg("d_model"), arg("d_ff"), arg("num_experts"),
           arg("top_k"), arg("expert_offset"), arg("local_experts"), arg("renormalize"), arg("activation"),
           arg("up_bias"), arg("down_bias"), arg("dtype"), arg("weight_type"), arg("down_weight_type"),
           arg("accumulate") = false, arg("transpose_weights") = false, arg("forward_only") = false)
      .def("run", &run_layer, arg("x"), arg("router_w"), arg("w_up"), arg("w_down"), arg("b_up"), arg("b_down"),
           arg("y"), arg("d_y") = nullptr, arg("d_x") = nullptr, arg("d_router_w") = nullptr, arg("d_w_up") = nullptr,
           arg("d_b_up") = nullptr, arg("d_w_down") = nullptr, arg("d_b_down") = nullptr);
}

}  // namespace vkgmm_py
