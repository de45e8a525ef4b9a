// Test-only: the device a Context's plans choose their schedule and tiles for (and their grid with device
// group sizes), when a test wants the shapes another device would get (a GPU's 8 x 8 register tiles, its
// short K steps) run on this one.
// lavapipe is a CPU device, so without this the GPU shapes would only ever be compiled (gpu-report),
// never checked against the reference. Internal: tests reach it through the Context's internals
// (ContextInternals::of(ctx).tiling_device); nothing else sets it.
#pragma once

#include <optional>

#include "vkgmm/context.hpp"

namespace vkgmm {

struct TilingDevice {
  // Unset: the real device. Set before the plans are made; read by each plan's tiling only (the limits
  // that decide what may run, such as CPU drivers' loop budget and the grid's, stay the real device's).
  std::optional<DeviceInfo> as;
  const DeviceInfo& of(const DeviceInfo& real) const { return as ? *as : real; }
  // Set: the grid plans with device group sizes take (ContextOptions::device_grid's choice otherwise), so
  // that a test runs both grids on one Context, whose pipelines (the same for either grid) compile once.
  std::optional<DeviceGrid> grid;
};

// `real` as a discrete GPU with this register file (DeviceInfo::vector_registers), compute units and
// subgroup size would describe itself, of no known vendor (the generic "gpu" device class, so that the
// register file decides the tile whatever the real device is); real's workgroup and shared-memory limits
// are kept, so every shape planned for it can run on the real device.
inline DeviceInfo discrete_gpu_like(const DeviceInfo& real, uint32_t vector_registers, uint32_t compute_units,
                                    uint32_t subgroup_size) {
  DeviceInfo gpu = real;
  gpu.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  gpu.vendor_id = gpu.device_id = 0;
  gpu.architecture = "gpu";
  gpu.vector_registers = vector_registers;
  gpu.compute_units = compute_units;
  gpu.subgroup_size = subgroup_size;
  return gpu;
}

}  // namespace vkgmm
