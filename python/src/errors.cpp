#include "errors.hpp"

#include "vkgmm/types.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {
// Set once at import, never freed: the exception types live as long as the interpreter.
PyObject* g_contract_error = nullptr;
PyObject* g_device_error = nullptr;

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
      raise(is_contract(e.status()) ? g_contract_error : g_device_error, e.what(), vkgmm::status_name(e.status()));
    }
  });
}

}  // namespace vkgmm_py
