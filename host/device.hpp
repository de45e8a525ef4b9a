// The Vulkan device a Context runs on, made by vkgmm or borrowed from the app, and what vkgmm learned
// of it once (internal; a part of Context::Impl).
#pragma once

#include <vulkan/vulkan.h>

#include "matrix_units.hpp"
#include "options.hpp"
#include "vkgmm/context.hpp"

namespace vkgmm {

// Throw an Error naming `what` when r is not VK_SUCCESS (device loss and OOM get their own codes).
void check_vk(VkResult r, const char* what);
// check_vk for a create or allocate call into `created`: a failed call leaves its output undefined (the
// spec), which a cleanup that destroys non-null handles would then destroy; it is reset first.
template <class Handle>
void check_created(VkResult r, Handle& created, const char* what) {
  if (r != VK_SUCCESS) created = VK_NULL_HANDLE;
  check_vk(r, what);
}
const char* vk_result_name(VkResult r);
// Whether the physical device offers the extension (host/requirements.cpp).
bool has_device_extension(VkPhysicalDevice pd, const char* name);

struct Device {
  bool owns = false;  // vkgmm made the instance and device, and destroys them
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;  // may be null for a borrowed device that only records
  uint32_t queue_family = 0;
  // A wrapped app's vkGetInstanceProcAddr (null: the linked loader's), for extension entry points.
  PFN_vkGetInstanceProcAddr app_get_instance_proc_addr = nullptr;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;

  DeviceInfo info;
  VkPhysicalDeviceMemoryProperties memory{};
  VkDeviceSize max_allocation = 0;  // maxMemoryAllocationSize (Vulkan 1.1); 0 where not reported
  uint32_t max_allocation_count = 0;  // maxMemoryAllocationCount: device memory objects alive at once
  // The subgroup operations compute shaders may use (VkPhysicalDeviceSubgroupProperties; 0 where the
  // compute stage has none).
  VkSubgroupFeatureFlags compute_subgroup_operations = 0;
  VkDriverId driver_id = VkDriverId(0);  // VkPhysicalDeviceDriverProperties::driverID
  ResolvedOptions options;  // read once, when the Context is made
  MatrixSubgroup matrix_subgroup;  // how the matrix builds' pipelines run their subgroups (with matrix units)
  // Compile-only contexts: VK_KHR_pipeline_executable_properties is enabled, pipelines capture their
  // statistics and internal representations (vkgmm gpu-report reads them).
  bool executable_properties = false;

  // After the handles are set: fills info and memory, resolves push_descriptor_set (required).
  void query();
  uint32_t find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags want) const;
  // The memory type of vkgmm's mapped buffers among `type_bits` (buffer_memory.hpp; large ones may be
  // staged instead): host-visible and coherent, device-local where the device has such memory (UMA,
  // ReBAR, lavapipe, a small BAR window); UINT32_MAX when none is host-visible. The bench gives the
  // buffers it lends vkgmm the same, so that borrowing is all they differ in, except on a discrete GPU
  // without resizable BAR, where vkgmm's large buffers are device-local and the bench's in the window.
  uint32_t buffer_memory_type(uint32_t type_bits) const;
  // Destroys the messenger, the device and the instance when vkgmm owns them.
  void destroy();
};

}  // namespace vkgmm
