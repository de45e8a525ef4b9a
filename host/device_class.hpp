// What kind of GPU a device is, and the per-class choices vkgmm's schedules make for it (internal).
//
// One table (device_class.cpp) holds a row per device class, the way CUTLASS keeps a default
// configuration per architecture and ggml-vulkan a warptile per vendor: the subgroup size its matrix
// units want, the shared schedule's register tile, step and chunks in flight, the matrix schedule's block,
// and the decode walk's rows. Everything that differs by vendor or architecture is read from the row,
// nowhere else: host/tiling.cpp's rules, which host/kernel_choice.hpp's choose_kernel applies for a plan.
#pragma once

#include <cstdint>
#include <string>

#include <vulkan/vulkan.h>

#include "vkgmm/context.hpp"

namespace vkgmm {

constexpr uint32_t kVendorAmd = 0x1002, kVendorNvidia = 0x10de, kVendorIntel = 0x8086;

// Every field holds the value the class takes (the generic rows hold the defaults), except two whose 0
// defers to the device: the matrix subgroup (its default size) and the shared schedule's register tile
// (0 x 0: from the register file it reports).
struct DeviceClass {
  const char* architecture = "gpu";  // DeviceInfo::architecture: "nvidia-ampere", "amd-rdna3", "intel-xe2", ...
  uint32_t vendor_id = 0;            // 0: any vendor (the generic rows)
  // The subgroup size the matrix builds ask for where the device lets pipelines choose one (0: the
  // device's default). RDNA3's WMMA runs natively in wave32; Intel's DPAS at the EU's native SIMD width.
  uint32_t matrix_subgroup = 0;
  // The shared schedule: its register tile (rows x columns of accumulators per invocation; 0 x 0: sized
  // from DeviceInfo::vector_registers where the device reports it, else 8 x 8), its reduction step (K
  // values staged per step), and the 4-element chunks of the next step one invocation may hold in
  // registers while the current step computes.
  uint32_t tile_rows = 0, tile_cols = 0;
  uint32_t shared_step = 16;
  uint32_t chunks_in_flight = 8;
  // The shared schedule's stage buffers (FMA builds), where they fit the device's shared memory: 2 on
  // GPUs, so that each step stores the next one beside it and waits at one barrier, not two. At the step
  // of 16 the largest stage (128 x 128 f32) is 16 KiB, 32 KiB in two: AMD's compute units (64 KiB) and
  // Intel's Xe-cores (64 KiB or more) hold two such workgroups; a device of 32 KiB per workgroup keeps
  // one buffer for it. NVIDIA 1 (device_class.cpp); CPU drivers 1 (shared memory is their cache, and
  // their shared schedule runs only where it is forced).
  uint32_t stage_buffers = 2;
  // The matrix schedule's automatic block (rows x product columns, and its step), the most subgroups it
  // spreads over, and the most accumulator matrices one subgroup holds.
  uint32_t matrix_rows = 128, matrix_cols = 128, matrix_step = 32;
  uint32_t matrix_subgroups = 8;
  uint32_t matrix_fragments = 16;
  // The most rows an invocation of the decode schedule takes while walking a block format: each row holds
  // its step of lhs beside the columns' decoded words.
  uint32_t decode_walk_rows = 2;
  // The most registers an invocation of the decode schedule fills with loads before their FMAs (an
  // element type's values of lhs and rhs, a block walk's quant words and scales: make_kernel_shape's steps
  // in flight): NAK (GA102) and ACO (NAVI31) hold 96 beside the accumulators without spills; ANV's SIMD8
  // build (DG2) spilled at 96 (f16 lhs, 8 rows) and holds 48.
  uint32_t decode_load_floats = 96;
};

// The row for a device: by vendor, PCI device id and name (drivers name the chip: "RADV NAVI31",
// "NVK GA102"), CPU devices apart. Never null: unknown devices get their vendor's generic row.
const DeviceClass& device_class(uint32_t vendor_id, uint32_t device_id, VkPhysicalDeviceType type,
                                const std::string& name);
// The row of a physical device (its properties).
const DeviceClass& device_class(VkPhysicalDevice physical);
// The row of the device `info` describes (its vendor, device id, type and name; a test's description of
// another device included).
const DeviceClass& device_class(const DeviceInfo& info);

}  // namespace vkgmm
