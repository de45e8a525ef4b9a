#include "plans.hpp"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "array.hpp"
#include "errors.hpp"
#include "gil.hpp"
#include "vkgmm/ops.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

// A tiling given as a sequence (tm, tk, tn) of ints, or returned as one by a tiling callable on whatever
// thread the library calls it from. Each step that may run Python code (the sequence's iteration, an
// item's __index__, the message's repr) is a guarded call, with the references owned guarded: a daemon
// thread the interpreter ends inside one at exit is parked, not unwound through pybind11's casters.
vkgmm::Tiling tiling_of_sequence(PyObject* t, const char* what) {
  std::vector<int64_t> v;
  bool ints = false;
  // A sequence (tuple, list, array), not text and not any iterable: a set's or a dict's order would say
  // which value is which.
  const bool sequence = PySequence_Check(t) && !PyUnicode_Check(t) && !PyBytes_Check(t) && !PyByteArray_Check(t);
  if (PyObject* items = sequence ? guarded([t] { return PySequence_Fast(t, ""); }) : nullptr) {
    Reference owned(items);
    ints = true;
    for (Py_ssize_t i = 0; ints && i < PySequence_Fast_GET_SIZE(items); ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(items, i);
      if (PyObject* index = guarded([item] { return PyNumber_Index(item); })) {
        Reference owned_index(index);
        const long long x = PyLong_AsLongLong(index);  // an exact int: no Python code runs
        ints = !(x == -1 && PyErr_Occurred());
        v.push_back(x);
      } else {
        ints = false;
      }
    }
  }
  if (!ints) {
    guarded([] { PyErr_Clear(); });
    std::string shown = "an object whose repr failed";
    if (PyObject* text = guarded([t] { return PyObject_Repr(t); })) {
      Reference owned(text);
      if (const char* utf8 = PyUnicode_AsUTF8(text)) shown = utf8;
    }
    guarded([] { PyErr_Clear(); });
    contract_error(std::string(what) + ": expected a tuple (tm, tk, tn) of ints, got " + shown);
  }
  if (v.size() != 3)
    contract_error(std::string(what) + ": expected a tuple (tm, tk, tn), got " + std::to_string(v.size()) + " values");
  return {v[0], v[1], v[2]};
}

// A Python callable kept by a plan (and copied by the library with the problem): the reference is
// released under the GIL, whichever thread drops the last copy.
std::shared_ptr<py::object> hold(py::object fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* p) {
    AcquireGil locked;
    drop_reference(p->release().ptr());
    delete p;
  });
}

// tiling: None (automatic), a tuple (tm, tk, tn), or a callable (m, k, n) -> tuple or None, which the
// library calls for each op's own shape (the backward's two ops each once); None from it is the
// library's error naming the shape.
vkgmm::TilingChoice tiling_of(const py::object& t) {
  if (t.is_none()) return vkgmm::TilingChoice::automatic();
  if (!PyCallable_Check(t.ptr())) return vkgmm::TilingChoice::of(tiling_of_sequence(t.ptr(), "tiling"));
  std::shared_ptr<py::object> fn = hold(t);
  return vkgmm::TilingChoice::of(
      vkgmm::TilingFn([fn](int64_t m, int64_t k, int64_t n) -> std::optional<vkgmm::Tiling> {
        AcquireGil locked;
        const Reference r(call_python(*fn, py::make_tuple(m, k, n)).release().ptr());
        if (r.get() == Py_None) return std::nullopt;
        return tiling_of_sequence(r.get(), "tiling: the callable's result");
      }));
}

// The output's columns: n, or n / 2 with a gated activation ([gate | up] in, one half out).
int64_t out_width(const vkgmm::GmmProblem& p) { return vkgmm::gated(p.epilogue.activation) ? p.n / 2 : p.n; }


// An Array bound to a plan's operand: of the plan's type and exactly the bytes the plan computes.
vkgmm::BufferView bind(const Array& a, vkgmm::DType want, uint64_t bytes, const char* what) {
  if (a.dtype != want)
    contract_error(std::string(what) + ": the plan takes " + vkgmm::dtype_name(want) + ", got a " +
                   vkgmm::dtype_name(a.dtype) + " Array");
  if (a.bytes != bytes)
    contract_error(std::string(what) + ": the plan takes " + std::to_string(bytes) + " bytes, got an Array of " +
                   std::to_string(a.bytes));
  return a.view();
}

// An optional operand: its view when given, else none. Which operands a plan takes is the library's
// operand table's rule, which record() applies first; an Array the plan takes no bytes of (bytes = 0)
// is left to that rule, which names why.
vkgmm::BufferView bind_optional(const Array* a, vkgmm::DType want, uint64_t bytes, const char* what) {
  if (!a) return {};
  return bytes ? bind(*a, want, bytes, what) : a->view();
}

// The operands gmm's and tgmm's plans share, bound and checked against the plan.
template <typename Operands, typename Plan>
Operands bind_common(const Plan& plan, const Array& lhs, const Array& rhs, const Array& out, const Array* existing_out) {
  const auto& p = plan.problem();
  const vkgmm::OperandSizes sz = plan.sizes();
  Operands ops;
  ops.lhs = bind(lhs, p.lhs_type, sz.lhs, "lhs");
  ops.rhs = bind(rhs, p.rhs_type, sz.rhs, "rhs");
  ops.out = bind(out, p.out_type, sz.out, "out");
  ops.existing_out = bind_optional(existing_out, p.out_type, p.existing_out ? sz.existing_out : 0, "existing_out");
  return ops;
}

// Whether the last wait on the device ran with this thread holding the GIL (it must not): what the
// tests check, since other threads running meanwhile proves nothing on a busy machine.
std::atomic<bool> g_last_wait_held_gil{false};

}  // namespace

void run(vkgmm::Context& ctx, const std::function<void(VkCommandBuffer)>& record) {
  ReleaseGil unlocked;
  g_last_wait_held_gil = PyGILState_Check() != 0;
  ctx.submit_and_wait(record);
}

namespace {

// The fields gmm's and tgmm's problems share.
template <typename Problem>
Problem common_problem(int64_t m, int64_t k, int64_t n, std::vector<int32_t> group_sizes, int64_t group_offset,
                       const std::string& lhs_type, const std::string& rhs_type, const std::string& out_type,
                       const char* out_what, const py::object& tiling) {
  Problem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.group_sizes = std::move(group_sizes);
  p.group_offset = group_offset;
  p.lhs_type = dtype_of(lhs_type, "lhs");
  p.rhs_type = dtype_of(rhs_type, "rhs");
  p.out_type = dtype_of(out_type, out_what);
  // Under the caller's own name: the library's message names the forward's out (preferred_element_type),
  // which the backward's d_out only shares a type with.
  if (vkgmm::is_quantized(p.out_type))
    contract_error(std::string(out_what) + ": " + out_type + " is a block format, not an output type (f32, f16 or bf16)");
  p.tiling = tiling_of(tiling);
  return p;
}

// gmm's problem as the forward and the backward plans share it (no routing, no epilogue).
vkgmm::GmmProblem gmm_problem(int64_t m, int64_t k, int64_t n, std::vector<int32_t> group_sizes,
                              int64_t num_rhs_groups, int64_t group_offset, bool transpose_rhs,
                              const std::string& lhs_type, const std::string& rhs_type, const std::string& out_type,
                              const char* out_what, const py::object& tiling) {
  auto p = common_problem<vkgmm::GmmProblem>(m, k, n, std::move(group_sizes), group_offset, lhs_type, rhs_type,
                                             out_type, out_what, tiling);
  p.num_rhs_groups = num_rhs_groups;
  p.transpose_rhs = transpose_rhs;
  return p;
}

// gmm's plan, with the routing and epilogue the library has.
struct GmmPlanPy {
  ContextRef ctx;
  std::unique_ptr<vkgmm::GmmPlan> plan;
  int64_t T = 0, top_k = 0, n_out = 0, g_local = 0, n = 0;
};

GmmPlanPy make_gmm_plan(ContextRef ctx, int64_t m, int64_t k, int64_t n, std::vector<int32_t> group_sizes,
                        int64_t num_rhs_groups, int64_t group_offset, bool transpose_rhs, const std::string& lhs_type,
                        const std::string& rhs_type, const std::string& out_type, bool existing_out,
                        const py::object& tiling, int64_t top_k, bool lhs_per_slot, bool combine,
                        int64_t num_experts, bool bias, const py::object& activation) {
  vkgmm::GmmProblem p = gmm_problem(m, k, n, std::move(group_sizes), num_rhs_groups, group_offset, transpose_rhs,
                                    lhs_type, rhs_type, out_type, "preferred_element_type", tiling);
  p.existing_out = existing_out;
  p.routing.top_k = top_k;
  p.routing.lhs_per_slot = lhs_per_slot;
  p.routing.combine = combine;
  p.routing.num_experts = num_experts;
  p.epilogue.bias = bias;
  p.epilogue.activation = activation_of(activation);
  GmmPlanPy r;
  r.ctx = ctx;
  {
    ReleaseGil unlocked;  // pipelines are compiled here; the tiling callable takes the GIL back
    r.plan = std::make_unique<vkgmm::GmmPlan>(*ctx, p);
  }
  const vkgmm::GmmProblem& q = r.plan->problem();
  r.T = m;
  r.top_k = top_k;
  r.n = n;
  r.n_out = out_width(p);
  r.g_local = q.num_rhs_groups >= 0 ? q.num_rhs_groups : int64_t(q.group_sizes.size()) - q.group_offset;
  return r;
}

// The device side of a routed run: the ids uploaded, a workspace of the run's own (not the plan's: one
// plan may run from several threads at once) and a status word starting at 0. A plan with nothing to run
// has no workspace and takes no status word. Ids given to an unrouted plan (top_k = 0) are uploaded as
// they are, for record() to refuse by the operand table's rule.
struct RoutedScratch {
  vkgmm::Buffer ids, status, workspace;
  RoutedScratch(vkgmm::Context& ctx, const py::array_t<int32_t, py::array::c_style>& given, int64_t T, int64_t top_k,
                VkDeviceSize workspace_bytes) {
    const uint64_t slots = top_k ? uint64_t(T * top_k) : uint64_t(given.size());
    if (uint64_t(given.size()) != slots)
      contract_error("ids: expected " + std::to_string(slots) + " ids [T, top_k] = [" + std::to_string(T) + ", " +
                     std::to_string(top_k) + "], got " + std::to_string(given.size()));
    ids = ctx.create_buffer(std::max<uint64_t>(4, slots * 4));
    status = ctx.create_buffer(4);
    const uint32_t zero = 0;
    status.upload(&zero, 4);
    if (slots) ids.upload(given.data(), slots * 4);
    if (workspace_bytes > 0) workspace = ctx.create_buffer(workspace_bytes);
  }
  vkgmm::BufferView workspace_view() const { return workspace.handle() ? workspace.view() : vkgmm::BufferView{}; }
  vkgmm::BufferView status_view() const { return workspace.handle() ? status.view() : vkgmm::BufferView{}; }
  uint32_t word() const {
    uint32_t w = 0;
    status.download(&w, 4);
    return w;
  }
};

// Returns the device status word of a routed run (0: every id was taken as it is).
uint32_t run_gmm(const GmmPlanPy& g, const Array& lhs, const Array& rhs, const Array& out, const Array* existing_out,
                 const Array* bias, const std::optional<py::array_t<int32_t, py::array::c_style>>& ids,
                 const Array* weights) {
  const vkgmm::GmmProblem& p = g.plan->problem();
  vkgmm::GmmOperands ops = bind_common<vkgmm::GmmOperands>(*g.plan, lhs, rhs, out, existing_out);
  const uint64_t bias_bytes = p.epilogue.bias ? uint64_t(g.g_local * g.n) * 4 : 0;
  ops.bias = bind_optional(bias, vkgmm::DType::f32, bias_bytes, "bias");
  ops.weights = bind_optional(weights, vkgmm::DType::f32, p.routing.combine ? uint64_t(g.T * g.top_k) * 4 : 0,
                              "weights");
  std::optional<RoutedScratch> scratch;
  if (ids) {
    scratch.emplace(*g.ctx, *ids, g.T, g.top_k, p.routing.top_k ? g.plan->workspace_bytes() : 0);
    ops.ids = scratch->ids.view();
    ops.workspace = scratch->workspace_view();
    ops.status = scratch->status_view();
  }
  run(*g.ctx, [&](VkCommandBuffer cb) { g.plan->record(cb, ops); });
  return scratch && p.routing.top_k ? scratch->word() : 0;
}

struct TgmmPlanPy {
  ContextRef ctx;
  std::unique_ptr<vkgmm::TgmmPlan> plan;
};

TgmmPlanPy make_tgmm_plan(ContextRef ctx, int64_t m, int64_t k, int64_t n, std::vector<int32_t> group_sizes,
                          int64_t group_offset, int64_t num_actual_groups, const std::string& lhs_type,
                          const std::string& rhs_type, const std::string& out_type, bool existing_out,
                          const py::object& tiling) {
  auto p = common_problem<vkgmm::TgmmProblem>(m, k, n, std::move(group_sizes), group_offset, lhs_type, rhs_type,
                                              out_type, "preferred_element_type", tiling);
  p.num_actual_groups = num_actual_groups;
  p.existing_out = existing_out;
  TgmmPlanPy r;
  r.ctx = ctx;
  ReleaseGil unlocked;
  r.plan = std::make_unique<vkgmm::TgmmPlan>(*ctx, p);
  return r;
}

void run_tgmm(const TgmmPlanPy& t, const Array& lhs, const Array& rhs, const Array& out, const Array* existing_out) {
  vkgmm::TgmmOperands ops = bind_common<vkgmm::TgmmOperands>(*t.plan, lhs, rhs, out, existing_out);
  // A split reduction's workspace of the run's own, as a routed run's.
  vkgmm::Buffer workspace;
  if (t.plan->workspace_bytes()) {
    workspace = t.ctx->create_buffer(t.plan->workspace_bytes());
    ops.workspace = workspace.view();
  }
  run(*t.ctx, [&](VkCommandBuffer cb) { t.plan->record(cb, ops); });
}

struct BackwardPlanPy {
  ContextRef ctx;
  std::unique_ptr<vkgmm::GmmBackwardPlan> plan;
  vkgmm::GmmProblem forward;
};

BackwardPlanPy make_backward_plan(ContextRef ctx, int64_t m, int64_t k, int64_t n, std::vector<int32_t> group_sizes,
                                  int64_t num_rhs_groups, int64_t group_offset, bool transpose_rhs,
                                  const std::string& lhs_type, const std::string& rhs_type,
                                  const std::string& out_type, const py::object& tiling, int64_t top_k,
                                  bool lhs_per_slot, bool combine, int64_t num_experts, bool bias,
                                  const py::object& activation, bool accumulate) {
  vkgmm::GmmProblem p = gmm_problem(m, k, n, std::move(group_sizes), num_rhs_groups, group_offset, transpose_rhs,
                                    lhs_type, rhs_type, out_type, "d_out", tiling);
  p.routing = {top_k, lhs_per_slot, combine, num_experts};
  p.epilogue = {bias, activation_of(activation)};
  vkgmm::GmmBackwardOptions options;
  options.accumulate = accumulate;
  BackwardPlanPy r;
  r.ctx = ctx;
  ReleaseGil unlocked;
  r.plan = std::make_unique<vkgmm::GmmBackwardPlan>(*ctx, p, options);
  r.forward = p;
  return r;
}

// Returns the device status word of a routed run (0 otherwise).
uint32_t run_backward(const BackwardPlanPy& b, const Array* lhs, const Array& rhs, const Array& d_out,
                      const Array& d_lhs, const Array* d_rhs,
                      const std::optional<py::array_t<int32_t, py::array::c_style>>& ids, const Array* weights,
                      const Array* bias, const Array* d_bias, const Array* d_weights) {
  const vkgmm::GmmProblem& f = b.forward;
  const vkgmm::GmmBackwardSizes sz = b.plan->sizes();
  const bool routed = f.routing.top_k > 0;
  vkgmm::GmmBackwardOperands ops;
  ops.lhs = bind_optional(lhs, f.lhs_type, sz.lhs, "lhs");
  ops.rhs = bind(rhs, f.rhs_type, sz.rhs, "rhs");
  ops.d_out = bind(d_out, f.out_type, sz.d_out, "d_out");
  ops.d_lhs = bind(d_lhs, f.lhs_type, sz.d_lhs, "d_lhs");
  ops.d_rhs = bind_optional(d_rhs, f.rhs_type, b.plan->frozen_rhs() ? 0 : sz.d_rhs, "d_rhs");
  ops.weights = bind_optional(weights, vkgmm::DType::f32, sz.weights, "weights");
  ops.bias = bind_optional(bias, vkgmm::DType::f32, sz.bias, "bias");
  ops.d_bias = bind_optional(d_bias, vkgmm::DType::f32, sz.d_bias, "d_bias");
  ops.d_weights = bind_optional(d_weights, vkgmm::DType::f32, sz.d_weights, "d_weights");
  std::optional<RoutedScratch> scratch;
  if (ids) {
    scratch.emplace(*b.ctx, *ids, f.m, f.routing.top_k, routed ? b.plan->workspace_bytes() : 0);
    ops.ids = scratch->ids.view();
    ops.workspace = scratch->workspace_view();
    ops.status = scratch->status_view();
  }
  // Unrouted: d_rhs's split reduction's workspace, of the run's own.
  vkgmm::Buffer workspace;
  if (!ops.workspace.buffer && b.plan->workspace_bytes()) {
    workspace = b.ctx->create_buffer(b.plan->workspace_bytes());
    ops.workspace = workspace.view();
  }
  run(*b.ctx, [&](VkCommandBuffer cb) { b.plan->record(cb, ops); });
  return scratch && routed ? scratch->word() : 0;
}

py::tuple tiling_tuple(const vkgmm::Tiling& t) { return py::make_tuple(t.tm, t.tk, t.tn); }

}  // namespace

void bind_plans(py::module_& m) {
  using py::arg;
  m.def("_last_wait_held_gil", [] { return g_last_wait_held_gil.load(); });
  py::class_<GmmPlanPy>(m, "_GmmPlan")
      .def(py::init(&make_gmm_plan), arg("context"), arg("m"), arg("k"), arg("n"), arg("group_sizes"),
           arg("num_rhs_groups"), arg("group_offset"), arg("transpose_rhs"), arg("lhs_type"), arg("rhs_type"),
           arg("out_type"), arg("existing_out"), arg("tiling"), arg("top_k"), arg("lhs_per_slot"), arg("combine"),
           arg("num_experts"), arg("bias"), arg("activation"))
      .def_property_readonly("tiling", [](const GmmPlanPy& g) { return tiling_tuple(g.plan->tiling()); })
      .def_property_readonly("schedule", [](const GmmPlanPy& g) { return std::string(vkgmm::schedule_name(g.plan->schedule())); })
      .def_property_readonly("num_tiles", [](const GmmPlanPy& g) { return g.plan->num_tiles(); })
      .def_property_readonly("num_rhs_groups", [](const GmmPlanPy& g) { return g.g_local; })
      .def_property_readonly("n_out", [](const GmmPlanPy& g) { return g.n_out; })
      .def("run", &run_gmm, arg("lhs"), arg("rhs"), arg("out"), arg("existing_out"), arg("bias"), arg("ids"),
           arg("weights"));
  py::class_<TgmmPlanPy>(m, "_TgmmPlan")
      .def(py::init(&make_tgmm_plan), arg("context"), arg("m"), arg("k"), arg("n"), arg("group_sizes"),
           arg("group_offset"), arg("num_actual_groups"), arg("lhs_type"), arg("rhs_type"), arg("out_type"),
           arg("existing_out"), arg("tiling"))
      .def_property_readonly("tiling", [](const TgmmPlanPy& t) { return tiling_tuple(t.plan->tiling()); })
      .def_property_readonly("schedule", [](const TgmmPlanPy& t) { return std::string(vkgmm::schedule_name(t.plan->schedule())); })
      .def_property_readonly("num_actual_groups", [](const TgmmPlanPy& t) {
        const vkgmm::TgmmProblem& p = t.plan->problem();
        return p.num_actual_groups >= 0 ? p.num_actual_groups : int64_t(p.group_sizes.size()) - p.group_offset;
      })
      .def("run", &run_tgmm, arg("lhs"), arg("rhs"), arg("out"), arg("existing_out"));
  py::class_<BackwardPlanPy>(m, "_GmmBackwardPlan")
      .def(py::init(&make_backward_plan), arg("context"), arg("m"), arg("k"), arg("n"), arg("group_sizes"),
           arg("num_rhs_groups"), arg("group_offset"), arg("transpose_rhs"), arg("lhs_type"), arg("rhs_type"),
           arg("out_type"), arg("tiling"), arg("top_k") = 0, arg("lhs_per_slot") = false, arg("combine") = false,
           arg("num_experts") = 0, arg("bias") = false, arg("activation") = py::none(), arg("accumulate") = false)
      .def_property_readonly("frozen_rhs", [](const BackwardPlanPy& b) { return b.plan->frozen_rhs(); })
      .def_property_readonly("n_out", [](const BackwardPlanPy& b) { return out_width(b.forward); })
      .def_property_readonly("reads_lhs", [](const BackwardPlanPy& b) { return b.plan->sizes().lhs > 0; })
      .def_property_readonly("has_d_rhs", [](const BackwardPlanPy& b) {
        return !b.plan->frozen_rhs() && b.plan->sizes().d_rhs > 0;
      })
      .def("run", &run_backward, arg("lhs"), arg("rhs"), arg("d_out"), arg("d_lhs"), arg("d_rhs"),
           arg("ids") = py::none(), arg("weights") = nullptr, arg("bias") = nullptr, arg("d_bias") = nullptr,
           arg("d_weights") = nullptr);
}

}  // namespace vkgmm_py
