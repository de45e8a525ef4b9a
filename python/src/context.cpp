#include "context.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "vkgmm/internals.hpp"  // take_teardown_messages: what the tests check after closing a Context
#include "errors.hpp"
#include "gil.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

std::optional<vkgmm::Schedule> schedule_of(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  if (const auto s = vkgmm::choice_of_name(vkgmm::kSchedules, *name)) return s;
  contract_error("Context: schedule: unknown schedule '" + *name + "' (expected " + vkgmm::choice_names(vkgmm::kSchedules) +
                 ")");
}

ContextRef make_context(std::optional<std::string> device, std::optional<bool> validate,
                        std::optional<std::string> schedule, std::optional<bool> storage16,
                        std::optional<bool> vec4_loads, std::optional<bool> texel_loads,
                        std::optional<double> timeout_s, std::optional<bool> eager_pipelines,
                        std::optional<std::string> matrix_extension) {
  vkgmm::ContextOptions o;
  if (device) o.device = *device;
  o.validate = validate;
  o.schedule = schedule_of(schedule);
  o.storage16 = storage16;
  o.vec4_loads = vec4_loads;
  o.texel_loads = texel_loads;
  o.timeout_s = timeout_s;
  o.eager_pipelines = eager_pipelines;
  if (matrix_extension) o.matrix_extension = *matrix_extension;
  // Every run gives its plan a workspace of the run's own (plans.cpp, moe_layer.cpp: one plan may run from
  // several threads at once), so the plans need none of their own.
  o.app_workspaces = true;
  ReleaseGil unlocked;  // instance and device creation take a while; other threads may run
  return std::make_shared<vkgmm::Context>(o);
}

py::dict info_of(const vkgmm::Context& c) {
  const vkgmm::DeviceInfo& i = c.info();
  py::dict d;
  d["name"] = i.name;
  d["driver"] = i.driver;
  d["type"] = i.type == VK_PHYSICAL_DEVICE_TYPE_CPU              ? "cpu"
              : i.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU   ? "discrete"
              : i.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? "integrated"
              : i.type == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU    ? "virtual"
                                                                 : "other";
  d["api_version"] = py::make_tuple(VK_API_VERSION_MAJOR(i.api_version), VK_API_VERSION_MINOR(i.api_version),
                                    VK_API_VERSION_PATCH(i.api_version));
  d["vendor_id"] = i.vendor_id;
  d["device_id"] = i.device_id;
  d["architecture"] = i.architecture;
  d["subgroup_size"] = i.subgroup_size;
  d["max_shared_memory"] = i.max_shared_memory;
  d["storage_buffer_16bit"] = i.storage_buffer_16bit;
  d["texel_loads"] = i.texel_loads_32bit;
  // The matrix units gmm and tgmm run on (None: none), and every cooperative-matrix shape listed.
  if (i.matrix_extension.empty())
    d["matrix_units"] = py::none();
  else
    d["matrix_units"] = py::make_tuple(i.matrix_extension, i.matrix_m, i.matrix_n, i.matrix_k);
  d["matrix_subgroup_size"] = i.matrix_subgroup_size;
  // Whether automatic schedules take them (False where the driver gave wrong results: docs/gpu-results.md).
  d["matrix_automatic"] = i.matrix_automatic;
  d["matrix_shapes"] = i.matrix_shapes;
  return d;
}

py::dict options_of(const vkgmm::Context& c) {
  const vkgmm::ContextOptions o = c.options();
  py::dict d;
  d["device"] = o.device;
  d["validate"] = o.validate.value_or(false);
  d["schedule"] = vkgmm::schedule_name(o.schedule.value_or(vkgmm::Schedule::automatic));
  d["storage16"] = o.storage16.value_or(true);
  d["vec4_loads"] = o.vec4_loads.value_or(true);
  d["texel_loads"] = o.texel_loads.value_or(true);
  d["timeout_s"] = o.timeout_s.value_or(0);
  d["eager_pipelines"] = o.eager_pipelines.value_or(false);
  d["matrix_extension"] = o.matrix_extension;
  d["app_workspaces"] = o.app_workspaces;
  return d;
}

}  // namespace

void bind_context(py::module_& m) {
  py::class_<vkgmm::Context, ContextRef>(m, "Context")
      .def(py::init(&make_context), py::kw_only(), py::arg("device") = py::none(), py::arg("validate") = py::none(),
           py::arg("schedule") = py::none(), py::arg("storage16") = py::none(), py::arg("vec4_loads") = py::none(),
           py::arg("texel_loads") = py::none(), py::arg("timeout_s") = py::none(),
           py::arg("eager_pipelines") = py::none(), py::arg("matrix_extension") = py::none())
      .def_property_readonly("info", &info_of)
      .def_property_readonly("options", &options_of)
      .def("take_validation_messages", &vkgmm::Context::take_validation_messages);
  // What Contexts reported while being destroyed (objects left alive), since the last call: the tests' check.
  m.def("_take_teardown_messages", [] { return vkgmm::internals::take_teardown_messages(); });
}

}  // namespace vkgmm_py
