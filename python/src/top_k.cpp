// vkgmm.top_k: router logits to the ids and weights gmm_ids takes (vkgmm::TopKPlan on the device), and
// vkgmm.top_k_backward: the weights' gradient to the logits (vkgmm::TopKBackwardPlan).
#include "top_k.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "array.hpp"
#include "errors.hpp"
#include "gil.hpp"
#include "plans.hpp"
#include "vkgmm/top_k.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

// logits as both functions take them, an f32 Array [T, E]: {T, E}.
std::pair<int64_t, int64_t> logits_shape(const Array& logits) {
  if (logits.dtype != vkgmm::DType::f32 || logits.shape.size() != 2)
    contract_error("logits: expected a float32 array [T, E] (the router's output)");
  return {logits.shape[0], logits.shape[1]};
}

// The plan, made with the GIL released (its pipeline may compile).
template <class Plan>
std::unique_ptr<Plan> make_plan(vkgmm::Context& ctx, const vkgmm::TopKProblem& p) {
  ReleaseGil unlocked;
  return std::make_unique<Plan>(ctx, p);
}

// A device buffer for `bytes` (Vulkan has no empty buffer: at least one word).
vkgmm::Buffer device_buffer(vkgmm::Context& ctx, uint64_t bytes) {
  return ctx.create_buffer(std::max<uint64_t>(bytes, 4));
}

// logits: an f32 Array [T, E]. Returns (ids int32 [T, top_k], weights float32 [T, top_k]) as numpy.
py::tuple top_k(const Array& logits, int64_t k, bool renormalize) {
  const auto [tokens, experts] = logits_shape(logits);
  vkgmm::Context& ctx = *logits.ctx;
  const auto plan = make_plan<vkgmm::TopKPlan>(ctx, {tokens, experts, k, renormalize});
  const vkgmm::TopKSizes sz = plan->sizes();
  vkgmm::Buffer ids = device_buffer(ctx, sz.ids), weights = device_buffer(ctx, sz.weights);
  vkgmm::TopKOperands ops;
  ops.logits = logits.view();
  ops.ids = ids.view(0, sz.ids);
  ops.weights = weights.view(0, sz.weights);
  run(ctx, [&](VkCommandBuffer cb) { plan->record(cb, ops); });
  py::array_t<int32_t> ids_out({tokens, k});
  py::array_t<float> weights_out({tokens, k});
  if (sz.ids) {
    ids.download(ids_out.mutable_data(), sz.ids);
    weights.download(weights_out.mutable_data(), sz.weights);
  }
  return py::make_tuple(ids_out, weights_out);
}

// An f32 Array of exactly this shape, else a ContractError naming it.
void expect_f32(const Array& a, const std::vector<int64_t>& shape, const char* what, const char* layout) {
  if (a.dtype != vkgmm::DType::f32 || a.shape != shape)
    contract_error(std::string(what) + ": expected a float32 array " + layout + " = [" + std::to_string(shape[0]) +
                   ", " + std::to_string(shape[1]) + "]");
}

// logits f32 [T, E], ids int32 [T, top_k] (any values: those outside [0, E) are skipped), weights and
// d_weights f32 [T, top_k]. Returns d_logits float32 [T, E] as numpy.
py::array_t<float> top_k_backward(const Array& logits, const py::array_t<int32_t, py::array::c_style>& ids,
                                  const Array& weights, const Array& d_weights, bool renormalize) {
  const auto [tokens, experts] = logits_shape(logits);
  if (ids.ndim() != 2 || ids.shape(0) != tokens)
    contract_error("ids: expected int32 [T, top_k] with T = " + std::to_string(tokens) + " (the logits' rows)");
  const int64_t k = ids.shape(1);
  expect_f32(weights, {tokens, k}, "weights", "[T, top_k]");
  expect_f32(d_weights, {tokens, k}, "d_weights", "[T, top_k]");
  vkgmm::Context& ctx = *logits.ctx;
  const auto plan = make_plan<vkgmm::TopKBackwardPlan>(ctx, {tokens, experts, k, renormalize});
  const vkgmm::TopKBackwardSizes sz = plan->sizes();
  vkgmm::Buffer id_buf = device_buffer(ctx, sz.ids), d_logits = device_buffer(ctx, sz.d_logits);
  if (sz.ids) id_buf.upload(ids.data(), sz.ids);
  vkgmm::TopKBackwardOperands ops;
  ops.logits = logits.view();
  ops.ids = id_buf.view(0, sz.ids);
  ops.weights = weights.view();
  ops.d_weights = d_weights.view();
  ops.d_logits = d_logits.view(0, sz.d_logits);
  run(ctx, [&](VkCommandBuffer cb) { plan->record(cb, ops); });
  py::array_t<float> out({tokens, experts});
  if (sz.d_logits) d_logits.download(out.mutable_data(), sz.d_logits);
  return out;
}

}  // namespace

void bind_top_k(py::module_& m) {
  m.def("_top_k", &top_k, py::arg("logits"), py::arg("top_k"), py::arg("renormalize"));
  m.def("_top_k_backward", &top_k_backward, py::arg("logits"), py::arg("ids"), py::arg("weights"),
        py::arg("d_weights"), py::arg("renormalize"));
}

}  // namespace vkgmm_py
