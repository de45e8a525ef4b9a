// The device's handles, what vkgmm reads of it once, and VkResult errors.
#include "device.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "buffer_memory.hpp"
#include "device_class.hpp"
#include "texel_views.hpp"

namespace vkgmm {

const char* vk_result_name(VkResult r) {
  switch (r) {
#define VKGMM_CASE(x) \
  case x:             \
    return #x;
    VKGMM_CASE(VK_SUCCESS)
    VKGMM_CASE(VK_NOT_READY)
    VKGMM_CASE(VK_TIMEOUT)
    VKGMM_CASE(VK_INCOMPLETE)
    VKGMM_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKGMM_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKGMM_CASE(VK_ERROR_INITIALIZATION_FAILED)
    VKGMM_CASE(VK_ERROR_DEVICE_LOST)
    VKGMM_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    VKGMM_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    VKGMM_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKGMM_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    VKGMM_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKGMM_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    VKGMM_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKGMM_CASE(VK_ERROR_FRAGMENTED_POOL)
    VKGMM_CASE(VK_ERROR_UNKNOWN)
    VKGMM_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
#undef VKGMM_CASE
    default:
      return "VkResult(unknown)";
  }
}

void check_vk(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  std::string msg = std::string(what) + " failed: " + vk_result_name(r);
  // A failed map is address space (or the host's memory) running out: the caller frees and retries, as
  // for an allocation.
  if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_MEMORY_MAP_FAILED)
    throw Error(Status::out_of_memory, msg);
  // Too many objects of a kind (device memory past maxMemoryAllocationCount): freeing some makes room.
  if (r == VK_ERROR_TOO_MANY_OBJECTS) throw Error(Status::out_of_memory, msg + " (too many objects of this kind are alive)");
  if (r == VK_ERROR_DEVICE_LOST || r == VK_TIMEOUT) throw Error(Status::device_lost, msg);
  throw Error(Status::vulkan_error, msg);
}

namespace {

// Workgroups the device runs at once, about (DeviceInfo::compute_units). Vulkan has no core count: a CPU
// device's threads are the host's (lavapipe starts one per CPU); two vendors' extensions give a GPU's.
uint32_t query_compute_units(VkPhysicalDevice physical, VkPhysicalDeviceType type) {
  if (type == VK_PHYSICAL_DEVICE_TYPE_CPU) return std::max(1u, std::thread::hardware_concurrency());
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  if (has_device_extension(physical, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    props.pNext = &amd;
    vkGetPhysicalDeviceProperties2(physical, &props);
    const uint32_t cus = amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
    if (cus) return cus;
  }
  if (has_device_extension(physical, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    props.pNext = &nv;
    vkGetPhysicalDeviceProperties2(physical, &props);
    if (nv.shaderSMCount) return nv.shaderSMCount;
  }
  return 64;
}

uint32_t query_vector_registers(VkPhysicalDevice physical, uint32_t subgroup_size) {
  if (subgroup_size == 0 || !has_device_extension(physical, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) return 0;
  VkPhysicalDeviceShaderCorePropertiesAMD core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &core;
  vkGetPhysicalDeviceProperties2(physical, &props);
  // vgprsPerSimd counts registers of wavefrontSize lanes; waves of subgroup_size lanes get proportionally more.
  return static_cast<uint32_t>(uint64_t(core.vgprsPerSimd) * core.wavefrontSize / subgroup_size);
}

}  // namespace

void Device::query() {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  subgroup.pNext = &driver;
  driver.pNext = &m3;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(physical, &props);
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  max_allocation = m3.maxMemoryAllocationSize;
  if (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) compute_subgroup_operations = subgroup.supportedOperations;
  const auto& lim = props.properties.limits;
  max_allocation_count = lim.maxMemoryAllocationCount;
  info.name = props.properties.deviceName;
  info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
  driver_id = driver.driverID;
  info.type = props.properties.deviceType;
  info.api_version = props.properties.apiVersion;
  info.vendor_id = props.properties.vendorID;
  info.device_id = props.properties.deviceID;
  info.architecture = device_class(info).architecture;
  info.subgroup_size = subgroup.subgroupSize;
  info.vector_registers = query_vector_registers(physical, subgroup.subgroupSize);
  info.max_shared_memory = lim.maxComputeSharedMemorySize;
  // Every vkgmm workgroup is one-dimensional (local_size_x): its invocations are bounded by the x size too.
  info.max_workgroup_invocations = std::min(lim.maxComputeWorkGroupInvocations, lim.maxComputeWorkGroupSize[0]);
  for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
  info.max_storage_buffer_range = lim.maxStorageBufferRange;
  info.min_storage_buffer_offset_alignment = lim.minStorageBufferOffsetAlignment;
  query_texel_support(physical, lim, info);
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max<uint64_t>(info.device_local_bytes, memory.memoryHeaps[i].size);
  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nf);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nf, fams.data());
  info.timestamps = queue_family < nf && fams[queue_family].timestampValidBits > 0 &&
                    lim.timestampComputeAndGraphics;
  info.timestamp_period_ns = lim.timestampPeriod;
  info.compute_units = query_compute_units(physical, info.type);

  PFN_vkGetDeviceProcAddr get_device_proc_addr = vkGetDeviceProcAddr;
  if (app_get_instance_proc_addr) {
    auto p = app_get_instance_proc_addr(instance, "vkGetDeviceProcAddr");
    if (!p) throw Error(Status::invalid_argument, "BorrowedDevice.get_instance_proc_addr: no vkGetDeviceProcAddr");
    get_device_proc_addr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(p);
  }
  push_descriptor_set =
      reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(get_device_proc_addr(device, "vkCmdPushDescriptorSetKHR"));
  info.push_descriptor = push_descriptor_set != nullptr;
  if (!push_descriptor_set)
    throw Error(Status::unsupported, "device: VK_KHR_push_descriptor is required and was not enabled");

}

uint32_t Device::find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

uint32_t Device::buffer_memory_type(uint32_t type_bits) const {
  return choose_buffer_memory(memory, type_bits, 0, false, false).type;
}

void Device::destroy() {
  if (!owns) return;
  if (device) vkDestroyDevice(device, nullptr);
  if (messenger) {
    auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy_messenger) destroy_messenger(instance, messenger, nullptr);
  }
  if (instance) vkDestroyInstance(instance, nullptr);
  device = VK_NULL_HANDLE;
  instance = VK_NULL_HANDLE;
}

}  // namespace vkgmm
