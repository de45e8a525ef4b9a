// vkgmm._vkgmm: the C++ API bound for the Python package (python/vkgmm/), which gives it megablox's
// signatures on numpy arrays. Everything checked or computed here is the library's; this layer converts.
#include <pybind11/pybind11.h>

#include "vkgmm/vkgmm.h"

#include "array.hpp"
#include "context.hpp"
#include "errors.hpp"
#include "gil.hpp"
#include "moe_layer.hpp"
#include "plans.hpp"
#include "top_k.hpp"
#include "weights.hpp"

PYBIND11_MODULE(_vkgmm, m) {
  m.doc() = "vkgmm's C++ API, bound (use the vkgmm package)";
  m.attr("__version__") = vkgmm_version_string();  // the library's: one version everywhere
  vkgmm_py::bind_errors(m);
  vkgmm_py::bind_context(m);
  vkgmm_py::bind_array(m);
  vkgmm_py::bind_plans(m);
  vkgmm_py::bind_weights(m);
  vkgmm_py::bind_top_k(m);
  vkgmm_py::bind_moe_layer(m);
  // The end of Py_Finalize waits for daemon threads inside vkgmm calls to park (gil.hpp). Py_AtExit
  // refuses past its 32 functions: the wait is then skipped, as without this module.
  Py_AtExit(&vkgmm_py::wait_for_released_threads);
}
