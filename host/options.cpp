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

// A choice given in the options (checked), else the one `env` names; text that names none leaves the
// automatic choice.
template <typename E, size_t N>
E resolved_choice(const NamedChoice<E> (&rows)[N], const std::optional<E>& given, const char* field, const char* env,
                  EnvLookup getenv) {
  if (given) return checked_choice(rows, *given, std::string("ContextOptions.") + field);
  const char* text = getenv(env);
  return text ? choice_of_name(rows, text).value_or(E::automatic) : E::automatic;
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
  r.schedule = resolved_choice(kSchedules, o.schedule, "schedule", "VKGMM_SCHEDULE", getenv);
  r.storage16 = o.storage16.value_or(!flag(getenv, "VKGMM_DISABLE_16BIT_STORAGE"));
  r.vec4_loads = o.vec4_loads.value_or(!flag(getenv, "VKGMM_DISABLE_VEC4"));
  r.texel_loads = o.texel_loads.value_or(!flag(getenv, "VKGMM_DISABLE_TEXEL"));
  r.device_grid = resolved_choice(kDeviceGrids, o.device_grid, "device_grid", "VKGMM_DEVICE_GRID", getenv);
  r.grid = resolved_choice(kGrids, o.grid, "grid", "VKGMM_GRID", getenv);
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
  if (const char* b = getenv("VKGMM_STAGE_BUFFERS")) {
    if (std::strcmp(b, "1") == 0) r.stage_buffers = 1;
    if (std::strcmp(b, "2") == 0) r.stage_buffers = 2;
  }
  if (const char* b = getenv("VKGMM_ROUTE_IN_KERNEL")) r.route_in_kernel = std::strcmp(b, "1") == 0;
  if (const char* b = getenv("VKGMM_PASS_BARRIER")) r.pass_barrier = std::strcmp(b, "1") == 0;
  if (const char* b = getenv("VKGMM_SIZES_IN_KERNEL")) r.sizes_in_kernel = std::strcmp(b, "0") != 0;
  if (const char* b = getenv("VKGMM_REVERSE_SUBGROUPS")) r.reverse_subgroups = std::strcmp(b, "1") == 0;
  if (const char* b = getenv("VKGMM_STAGED_MEMORY")) r.staged_memory = std::strcmp(b, "1") == 0;
  if (!o.matrix_extension.empty()) {
    if (!known_matrix_extension(o.matrix_extension))
      throw Error(Status::invalid_argument, "ContextOptions.matrix_extension: '" + o.matrix_extension +
                                                "' is not VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix");
    r.matrix_extension = o.matrix_extension;
  } else if (const char* e = getenv("VKGMM_MATRIX_EXTENSION")) {
    // As $VKGMM_SCHEDULE: unknown values leave the default.
    if (known_matrix_extension(e)) r.matrix_extension = e;
  }
  r.app_workspaces = o.app_workspaces;
  return r;
}

ContextOptions to_public(const ResolvedOptions& r) {
  return {.device = r.device, .validate = r.validate, .schedule = r.schedule, .storage16 = r.storage16,
          .vec4_loads = r.vec4_loads, .texel_loads = r.texel_loads, .device_grid = r.device_grid, .grid = r.grid,
          .persistent_workgroups = r.persistent_workgroups, .timeout_s = r.timeout_s,
          .eager_pipelines = r.eager_pipelines, .matrix_extension = r.matrix_extension,
          .app_workspaces = r.app_workspaces};
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
  checked_choice(kGrids, requested, std::string(op) + ": grid");
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
