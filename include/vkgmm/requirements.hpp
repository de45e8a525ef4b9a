// What vkgmm needs from a device, for an application that creates the device itself and then hands it to
// Context::wrap(). Ask before vkCreateDevice: enable the required extensions, and the optional features
// the device has; then tell wrap() which optional features you enabled (BorrowedDevice).
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "vkgmm/export.h"

namespace vkgmm {

struct DeviceRequirements {
  // The device (and the instance's apiVersion) must be at least this.
  uint32_t min_api_version = VK_API_VERSION_1_2;
  // Device extensions to enable; the pointers are static strings, ready for ppEnabledExtensionNames.
  std::vector<const char*> required_extensions;
  // Optional features vkgmm uses when enabled and can do without, by their Vulkan names
  // ("storageBuffer16BitAccess", in VkPhysicalDeviceVulkan11Features): 16-bit operands are then read and
  // written natively instead of through packed 32-bit words.
  std::vector<const char*> optional_features;

  // Filled by device_requirements(VkPhysicalDevice) only:
  bool supported = true;              // the device has everything required
  std::vector<std::string> missing;   // what it lacks, one line each (empty when supported)
  bool storage_buffer_16bit = false;  // the device has storageBuffer16BitAccess: enable it if you like
  // Filled by device_requirements(VkInstance, VkPhysicalDevice) only: the cooperative-matrix extension
  // vkgmm's matrix schedule (Schedule::matrix: f16 products on the matrix units) would use on the device,
  // "VK_KHR_cooperative_matrix" or "VK_NV_cooperative_matrix" (a static string); nullptr where it can use
  // none. To use them, enable it, VK_EXT_subgroup_size_control and the features cooperativeMatrix,
  // shaderFloat16, vulkanMemoryModel, vulkanMemoryModelDeviceScope, storageBuffer16BitAccess, and
  // subgroupSizeControl and computeFullSubgroups where the device has them (a device whose subgroups are
  // one size may lack both), then set BorrowedDevice::matrix_units.
  const char* matrix_extension = nullptr;
};

// The requirements alone (supported = true, nothing probed).
VKGMM_API DeviceRequirements device_requirements();
// The requirements checked against a physical device: supported / missing say whether wrap() will accept
// a device made from it (with the required extensions enabled), storage_buffer_16bit what it offers.
VKGMM_API DeviceRequirements device_requirements(VkPhysicalDevice physical_device);
// The same, and the matrix units (matrix_extension), which take the instance to query. `gipa`: the
// vkGetInstanceProcAddr the app loads Vulkan with (nullptr: the loader vkgmm links).
VKGMM_API DeviceRequirements device_requirements(VkInstance instance, VkPhysicalDevice physical_device,
                                                 PFN_vkGetInstanceProcAddr gipa = nullptr);

}  // namespace vkgmm
