// Reading ContextOptions and their environment defaults, once per Context.
#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace vkgmm {

namespace {

bool flag(EnvLookup getenv, const char* name) {
  const char* v = getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

Grid checked_grid(Grid g, const char* what) {
  if (g != Grid::automatic && g != Grid::per_visit && g != Grid::persistent)
    throw Error(Status::invalid_argument,
                std::string(what) + ": " + std::to_string(static_cast<int>(g)) + " is not automatic, per_visit or persistent");
  return g;
}

bool known_matrix_extension(const std::string& name) {
  return name == "VK_KHR_cooperative_matrix" || name == "VK_NV_cooperative_matrix";
}

}  // namespace

ResolvedOptions resolve_options(const ContextOptions& o, EnvLookup getenv) {
  ResolvedOptions r;
  r.device = o.device;
  if (r.device.empty())
    if (const char* d = getenv("VKGMM_DEVICE")) r.device = d;
  r.validate = o.validate.value_or(flag(getenv, "VKGMM_VALIDATE"));
  if (o.schedule) {
    const Schedule s = *o.schedule;
    if (s != Schedule::automatic && s != Schedule::shared && s != Schedule::direct && s != Schedule::matrix)
      throw Error(Status::invalid_argument, "ContextOptions.schedule: " + std::to_string(static_cast<int>(s)) +
                                                " is not automatic, shared, direct or matrix");
    r.schedule = s;
  } else if (const char* s = getenv("VKGMM_SCHEDULE")) {
    // Unknown values leave the choice to each problem, as before the option existed.
    if (std::strcmp(s, "shared") == 0) r.schedule = Schedule::shared;
    if (std::strcmp(s, "direct") == 0) r.schedule = Schedule::direct;
    if (std::strcmp(s, "matrix") == 0) r.schedule = Schedule::matrix;
  }
  r.storage16 = o.storage16.value_or(!flag(getenv, "VKGMM_DISABLE_16BIT_STORAGE"));
  r.vec4_loads = o.vec4_loads.value_or(!flag(getenv, "VKGMM_DISABLE_VEC4"));
  r.texel_loads = o.texel_loads.value_or(!flag(getenv, "VKGMM_DISABLE_TEXEL"));
  if (o.device_grid) {
    const DeviceGrid g = *o.device_grid;
    if (g != DeviceGrid::automatic && g != DeviceGrid::indirect && g != DeviceGrid::upper_bound)
      throw Error(Status::invalid_argument, "ContextOptions.device_grid: " + std::to_string(static_cast<int>(g)) +
                                                " is not automatic, indirect or upper_bound");
    r.device_grid = g;
  } else if (const char* g = getenv("VKGMM_DEVICE_GRID")) {
    // As $VKGMM_SCHEDULE: unknown values leave the automatic choice.
    if (std::strcmp(g, "indirect") == 0) r.device_grid = DeviceGrid::indirect;
    if (std::strcmp(g, "upper_bound") == 0) r.device_grid = DeviceGrid::upper_bound;
  }
  if (o.grid) {
    r.grid = checked_grid(*o.grid, "ContextOptions.grid");
  } else if (const char* g = getenv("VKGMM_GRID")) {
    // As $VKGMM_SCHEDULE: unknown values leave the choice to each problem.
    if (std::strcmp(g, "per_visit") == 0) r.grid = Grid::per_visit;
    if (std::strcmp(g, "persistent") == 0) r.grid = Grid::persistent;
  }
  if (o.persistent_workgroups) {
    r.persistent_workgroups = *o.persistent_workgroups;
  } else if (const char* w = getenv("VKGMM_PERSISTENT_WORKGROUPS")) {
    // Nonsense keeps the default (0: one per compute unit).
    char* end = nullptr;
    const unsigned long long v = std::strtoull(w, &end, 10);
    if (end != w && *end == '\0' && v <= UINT32_MAX) r.persistent_workgroups = static_cast<uint32_t>(v);
  }
  if (o.timeout_s) {
    if (!(*o.timeout_s > 0) || !std::isfinite(*o.timeout_s))
      throw Error(Status::invalid_argument,
                  "ContextOptions.timeout_s: " + std::to_string(*o.timeout_s) + " must be a positive number of seconds");
    r.timeout_s = *o.timeout_s;
  } else if (const char* t = getenv("VKGMM_TIMEOUT_S")) {
    // Bounded, so a hung device surfaces as an error instead of a hang; nonsense keeps the default.
    const double seconds = std::atof(t);
    if (seconds > 0 && std::isfinite(seconds)) r.timeout_s = seconds;
  }
  if (o.eager_pipelines) {
    r.eager_pipelines = o.eager_pipelines;
  } else if (const char* e = getenv("VKGMM_EAGER_PIPELINES")) {
    // 1 or 0; anything else leaves the choice to the device type.
    if (std::strcmp(e, "1") == 0) r.eager_pipelines = true;
    if (std::strcmp(e, "0") == 0) r.eager_pipelines = false;
  }
  if (const char* f = getenv("VKGMM_INJECT_FAULT")) r.inject_fault = f;
  if (!o.matrix_extension.empty()) {
    if (!known_matrix_extension(o.matrix_extension))
      throw Error(Status::invalid_argument, "ContextOptions.matrix_extension: '" + o.matrix_extension +
                                                "' is not VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix");
    r.matrix_extension = o.matrix_extension;
  } else if (const char* e = getenv("VKGMM_MATRIX_EXTENSION")) {
    // As $VKGMM_SCHEDULE: unknown values leave the default.
    if (known_matrix_extension(e)) r.matrix_extension = e;
  }
  return r;
}

ContextOptions to_public(const ResolvedOptions& r) {
  ContextOptions o;
  o.device = r.device;
  o.validate = r.validate;
  o.schedule = r.schedule;
  o.storage16 = r.storage16;
  o.vec4_loads = r.vec4_loads;
  o.texel_loads = r.texel_loads;
  o.device_grid = r.device_grid;
  o.grid = r.grid;
  o.persistent_workgroups = r.persistent_workgroups;
  o.timeout_s = r.timeout_s;
  o.eager_pipelines = r.eager_pipelines;
  o.matrix_extension = r.matrix_extension;
  return o;
}

bool eager_pipelines(const ResolvedOptions& o, const DeviceInfo& info) {
  if (o.compile_only) return false;  // its plans record nothing: the planned pipeline is all they need
  return o.eager_pipelines.value_or(info.type != VK_PHYSICAL_DEVICE_TYPE_CPU);
}

DeviceGrid device_grid(const ResolvedOptions& o, const DeviceInfo& info) {
  // One default for every device type: measured on lavapipe only, where the indirect grid was never
  // clearly slower (docs/device-group-sizes.md); no GPU measurement gives a reason to differ.
  (void)info;
  if (o.device_grid != DeviceGrid::automatic) return o.device_grid;
  return DeviceGrid::indirect;
}

bool persistent_grid(const char* op, Grid requested, const ResolvedOptions& o, const DeviceInfo& info) {
  checked_grid(requested, (std::string(op) + ": grid").c_str());
  (void)info;
  if (o.grid != Grid::automatic) return o.grid == Grid::persistent;
  if (requested != Grid::automatic) return requested == Grid::persistent;
  // Measured on lavapipe: the persistent grid is slower than one workgroup per item (docs/architecture.md,
  // "The persistent grid"); no GPU measured.
  return false;
}

uint32_t persistent_workgroups(const ResolvedOptions& o, const DeviceInfo& info) {
  if (o.persistent_workgroups) return o.persistent_workgroups;
  return std::max<uint32_t>(info.compute_units, 1);
}

void ResolvedOptions::check_records(const char* op) const {
  if (compile_only)
    throw Error(Status::unsupported, std::string(op) + ": the context only compiles pipelines: plans record nothing");
}

}  // namespace vkgmm
