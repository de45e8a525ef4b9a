// vkgmm.top_k: router logits to the ids and weights gmm_ids takes (vkgmm::TopKPlan on the device).
#include "top_k.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <string>

#include "array.hpp"
#include "errors.hpp"
#include "plans.hpp"
#include "vkgmm/top_k.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

// logits: an f32 Array [T, E]. Returns (ids int32 [T, top_k], weights float32 [T, top_k]) as numpy.
py::tuple top_k(const Array& logits, int64_t k, bool renormalize) {
  if (logits.dtype != vkgmm::DType::f32 || logits.shape.size() != 2)
    contract_error("logits: expected a float32 array [T, E] (the router's output)");
  const int64_t tokens = logits.shape[0], experts = logits.shape[1];
  vkgmm::Context& ctx = *logits.ctx;
  std::unique_ptr<vkgmm::TopKPlan> plan;
  {
    py::gil_scoped_release unlocked;
    plan = std::make_unique<vkgmm::TopKPlan>(ctx, vkgmm::TopKProblem{tokens, experts, k, renormalize});
  }
  const vkgmm::TopKSizes sz = plan->sizes();
  // Vulkan has no empty buffer: at least one word each.
  vkgmm::Buffer ids = ctx.create_buffer(std::max<uint64_t>(sz.ids, 4));
  vkgmm::Buffer weights = ctx.create_buffer(std::max<uint64_t>(sz.weights, 4));
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

}  // namespace

void bind_top_k(py::module_& m) {
  m.def("_top_k", &top_k, py::arg("logits"), py::arg("top_k"), py::arg("renormalize"));
}

}  // namespace vkgmm_py
