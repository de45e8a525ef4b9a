// ContextOptions resolved once, when a Context is made: every switch a plan or a submission reads,
// with the environment consulted only here (internal).
#pragma once

#include <optional>
#include <string>

#include "vkgmm/context.hpp"

namespace vkgmm {

struct ResolvedOptions {
  std::string device;                       // "" = the best device
  bool validate = false;
  Schedule schedule = Schedule::automatic;  // shared / direct: forced on every plan of the context
  bool storage16 = true;                    // the 16-bit-storage modules where the device allows
  bool vec4_loads = true;                   // 4-element loads (either schedule) where shapes allow
  bool texel_loads = true;                  // inputs through texel views where the device allows
  DeviceGrid device_grid = DeviceGrid::automatic;  // gmm's grid with device group sizes
  Grid grid = Grid::automatic;              // per_visit / persistent: forced on every plan of the context
  uint32_t persistent_workgroups = 0;       // 0: the device's compute units
  double timeout_s = 600;                   // every wait on the device
  std::optional<bool> eager_pipelines;      // unset: by device type (eager_pipelines())
  std::string matrix_extension;             // "" = KHR where vkgmm has its build, else NV
  bool app_workspaces = false;              // plans allocate no workspace: every record() gives one
  std::string inject_fault;                 // test-only: $VKGMM_INJECT_FAULT (faults.hpp)
  // For timing the shared and matrix schedules' other stage count on a device: $VKGMM_STAGE_BUFFERS, 1 or
  // 2, where they fit (KernelShape::stages); 0, anything else: the device class's (the matrix builds: 1).
  uint32_t stage_buffers = 0;
  // For timing on a device: $VKGMM_ROUTE_IN_KERNEL=1 has a combined call of few slots read its ids in the
  // kernel (one dispatch, gmm_plan.cpp) instead of taking the routing build, the same bits as the build's
  // path with the same tiles. Off by default: on lavapipe it is slower (one workgroup walks a token's
  // slots where the build's visits run side by side), and no GPU has timed it.
  bool route_in_kernel = false;
  // For timing on a device: $VKGMM_PASS_BARRIER=1 puts a barrier before each later pass of an op's
  // kernel (the tile heights per group), which otherwise run side by side, each writing its own rows of
  // out. The same bits either way; with the barrier, synchronization validation has nothing to report
  // between the passes (the test suite's .sync runs), without it each pass can fill the units the one
  // before leaves idle. No GPU has timed the two yet.
  bool pass_barrier = false;
  // A gmm of few rows with its group sizes on the device reads them in the kernel (one dispatch,
  // gmm_plan.cpp) instead of taking the metadata build, the same bits with the same tiles.
  // $VKGMM_SIZES_IN_KERNEL=0 keeps the build, for timing the two.
  bool sizes_in_kernel = true;
  // Test-only: $VKGMM_REVERSE_SUBGROUPS=1 has the kernels that share memory between subgroups number them
  // from the last (shaders/invocation.glsl), so that a race a CPU driver's fixed order hides shows.
  bool reverse_subgroups = false;
  // Test-only: $VKGMM_STAGED_MEMORY=1 puts every buffer vkgmm makes in device-local memory reached through
  // staging copies, as a discrete GPU without a resizable BAR does for large ones (buffer_memory.hpp).
  bool staged_memory = false;
  // Internal, never from the environment (open_compile_only, context_impl.hpp): plans only compile their
  // pipelines, capturing ACO-style statistics where the driver offers them; no memory, no submission.
  bool compile_only = false;
  // Throws Error(unsupported) naming `op` on a compile-only context: its plans record nothing.
  void check_records(const char* op) const;
};

// `value` if `rows` (kSchedules, kDeviceGrids, kGrids) name it; else Error(invalid_argument) naming `what`
// and the list: "ContextOptions.grid: 9 is not automatic, per_visit or persistent".
template <typename E, size_t N>
E checked_choice(const NamedChoice<E> (&rows)[N], E value, const std::string& what) {
  if (!choice_name(rows, value))
    throw Error(Status::invalid_argument,
                what + ": " + std::to_string(static_cast<int>(value)) + " is not " + choice_names(rows));
  return value;
}

// Where an option is unset, the environment gives the default: $VKGMM_DEVICE, $VKGMM_VALIDATE,
// $VKGMM_SCHEDULE, $VKGMM_DISABLE_16BIT_STORAGE, $VKGMM_DISABLE_VEC4, $VKGMM_DISABLE_TEXEL,
// $VKGMM_DEVICE_GRID, $VKGMM_GRID, $VKGMM_PERSISTENT_WORKGROUPS, $VKGMM_TIMEOUT_S,
// $VKGMM_EAGER_PIPELINES, $VKGMM_MATRIX_EXTENSION; and $VKGMM_INJECT_FAULT, $VKGMM_STAGE_BUFFERS,
// $VKGMM_ROUTE_IN_KERNEL, $VKGMM_PASS_BARRIER, $VKGMM_SIZES_IN_KERNEL, which no option sets. `getenv` is
// the lookup (tests pass their own). Throws Error(invalid_argument) on an option out of range (a schedule
// that is no Schedule, a timeout that is not positive).
using EnvLookup = const char* (*)(const char*);
ResolvedOptions resolve_options(const ContextOptions& options, EnvLookup getenv);

// The options as the public struct, every field set (Context::options()).
ContextOptions to_public(const ResolvedOptions& o);

// Whether plans compile every pipeline record() can bind when they are made: the option, else on GPUs
// (a compile costs milliseconds there) and off on CPU devices (a second of CPU per pipeline on lavapipe:
// record() compiles a variant the first time a buffer or offset needs it).
bool eager_pipelines(const ResolvedOptions& o, const DeviceInfo& info);

// The grid a plan takes with device group sizes: the option, automatic resolved for the device.
DeviceGrid device_grid(const ResolvedOptions& o, const DeviceInfo& info);

// Whether an op's plan takes the persistent grid: the context's forced grid, else the problem's, else
// the automatic choice for the device. Throws Error(invalid_argument), naming op's grid, on a value
// that is no Grid.
bool persistent_grid(const char* op, Grid requested, const ResolvedOptions& o, const DeviceInfo& info);
// The persistent grid's workgroup count: the option, else the device's compute units (at least 1).
uint32_t persistent_workgroups(const ResolvedOptions& o, const DeviceInfo& info);

}  // namespace vkgmm
