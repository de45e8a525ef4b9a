#include "errors.hpp"

#include <optional>
#include <string>

#include "vkgmm/internals.hpp"
#include "vkgmm/types.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {
// Set once at import, never freed: the exception types live as long as the interpreter.
PyObject* g_contract_error = nullptr;
PyObject* g_device_error = nullptr;

// The library's messages name the C++ API's fields and calls; a Python caller knows them by the module's
// keyword arguments. Longer phrases first: each replaces every occurrence, in order. The plans' operand
// rules say "view" and "problem"; Python passes arrays to a plan made with keyword switches.
constexpr vkgmm::internals::NameSwap kPythonNames[] = {
    {"a view was given but the problem has existing_out = false",
     "an array was given but the plan was made with existing_out=False"},
    {"the problem has existing_out but no view was given", "the plan was made with existing_out=True but none was given"},
    {"the problem combines the slots (Routing::combine) but no view was given",
     "the plan was made with combine=True but none was given"},
    {"a view was given but the problem writes every slot's result (Routing::combine is off)",
     "an array was given but the plan was made with combine=False"},
    {"a view was given but the problem has no bias (Epilogue::bias)",
     "an array was given but the plan was made without bias=True"},
    {"the problem has a bias (Epilogue::bias) but no view was given", "the plan was made with bias=True but none was given"},
    {"num_rhs_groups (rhs.shape[0])", "rhs.shape[0]"},
    {"num_rhs_groups (routing's local experts)", "rhs.shape[0] (the local experts)"},
    {"out (out_type, Python's preferred_element_type)", "preferred_element_type"},
    {"routing: group_offset", "group_offset"},
    {"routing: num_experts", "num_experts"},
    {"routing.num_experts", "num_experts"},
    {"(device_group_sizes: one group may hold them all)", "(one group may hold them all)"},
    {"ContextOptions::device", "Context's device"},
    {"ContextOptions::timeout_s", "Context's timeout_s"},
    {"ContextOptions::storage16", "Context's storage16"},
    {"ContextOptions::texel_loads", "Context's texel_loads"},
    {"ContextOptions::eager_pipelines", "Context's eager_pipelines"},
    {"ContextOptions.timeout_s", "timeout_s"},
    {"ContextOptions.matrix_extension", "matrix_extension"},
    {"ContextOptions.schedule", "schedule"},
    {"submit_and_wait: ", "waiting for the device: "},
    {"create_buffer: ", "allocating device memory: "},
};

bool is_contract(vkgmm::Status s) {
  return s == vkgmm::Status::invalid_argument || s == vkgmm::Status::unsupported;
}

void raise(PyObject* type, const char* message, const char* status) {
  py::object exc = py::reinterpret_borrow<py::object>(type)(message);
  exc.attr("status") = status;
  PyErr_SetObject(type, exc.ptr());
}
}  // namespace

void contract_error(const std::string& message) {
  throw vkgmm::Error(vkgmm::Status::invalid_argument, message);
}

vkgmm::DType dtype_of(const std::string& name, const char* what) {
  const std::optional<vkgmm::DType> t = vkgmm::parse_dtype(name);
  if (!t) contract_error(std::string(what) + ": unknown type '" + name + "'");
  return *t;
}

vkgmm::Activation activation_of(const py::object& activation) {
  if (activation.is_none()) return vkgmm::Activation::none;
  if (!py::isinstance<py::str>(activation))
    throw py::type_error("activation: expected None or a str, got " +
                         std::string(py::str(py::type::handle_of(activation).attr("__name__"))));
  const std::string name = activation.cast<std::string>();
  if (const std::optional<vkgmm::Activation> a = vkgmm::activation_of_name(name.c_str())) return *a;
  contract_error("activation: unknown activation '" + name + "' (expected None or one of " +
                 vkgmm::kActivationNames + ")");
}

void bind_errors(py::module_& m) {
  g_contract_error = PyErr_NewExceptionWithDoc("vkgmm.ContractError",
      "The input breaks a rule of vkgmm's contract (or the device cannot run it); the message names the argument.",
      PyExc_ValueError, nullptr);
  g_device_error = PyErr_NewExceptionWithDoc("vkgmm.DeviceError",
      "The device failed: out of memory, device lost or timed out, a Vulkan error, a validation message.",
      PyExc_RuntimeError, nullptr);
  // Class-level defaults, for the errors the Python layer raises itself; vkgmm's own set the instance's.
  py::handle(g_contract_error).attr("status") = "invalid_argument";
  py::handle(g_device_error).attr("status") = "vulkan_error";
  m.add_object("ContractError", py::handle(g_contract_error));
  m.add_object("DeviceError", py::handle(g_device_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const vkgmm::Error& e) {
      raise(is_contract(e.status()) ? g_contract_error : g_device_error,
            vkgmm::internals::renamed(e.what(), kPythonNames).c_str(), vkgmm::status_name(e.status()));
    }
  });
}

}  // namespace vkgmm_py
