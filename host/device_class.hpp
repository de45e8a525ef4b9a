// What kind of GPU a device is, and the per-class choices vkgmm's schedules make for it (internal).
//
// One table (device_class.cpp) holds a row per device class, the way CUTLASS keeps a default
// configuration per architecture and ggml-vulkan a warptile per vendor: the subgroup size its matrix
// units want and the shared schedule's register tile where the register file the device reports does not
// decide it. Everything that differs by vendor or architecture is read from the row, nowhere else.
#pragma once

#include <cstdint>
#include <string>

#include <vulkan/vulkan.h>

#include "vkgmm/context.hpp"

namespace vkgmm {

constexpr uint32_t kVendorAmd = 0x1002, kVendorNvidia = 0x10de, kVendorIntel = 0x8086;

struct DeviceClass {
  const char* architecture;  // DeviceInfo::architecture: "nvidia-ampere", "amd-rdna3", "intel-xe2", ...
  uint32_t vendor_id;        // 0: any vendor (the generic rows)
  // The subgroup size the matrix builds ask for where the device lets pipelines choose one (0: the
  // device's default). RDNA3's WMMA runs natively in wave32; Intel's DPAS at the EU's native SIMD width.
  uint32_t matrix_subgroup;
  // The shared schedule's register tile (rows x columns of accumulators per invocation); 0 x 0: sized from
  // DeviceInfo::vector_registers where the device reports it, else 8 x 8.
  uint32_t tile_rows, tile_cols;
  // The most accumulator matrices a subgroup of the matrix schedule holds (0: kMatrixFragments,
  // host/tiling.hpp). Intel's register file holds 128 registers per thread, and one 8 x 8 (Xe-HPG) or
  // 8 x 16 (Xe2) f32 accumulator takes 8 of them at the DPAS width.
  uint32_t matrix_fragments;
  // The most rows an invocation of the decode schedule takes while walking a block format (0: 2). Each row
  // holds its step of lhs beside the columns' decoded words; Intel's SIMD8 register file fits one.
  uint32_t decode_walk_rows;
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
