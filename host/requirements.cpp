// The device requirements: one list, used by Context's own device creation, by wrap() and by apps.
#include "vkgmm/requirements.hpp"

#include <algorithm>
#include <cstring>

#include "device.hpp"
#include "device_class.hpp"
#include "matrix_units.hpp"

namespace vkgmm {

bool has_device_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

namespace {

bool has_compute_queue(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fams.data());
  return std::any_of(fams.begin(), fams.end(), [](auto& f) { return (f.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0; });
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v));
}

}  // namespace

DeviceRequirements device_requirements() {
  DeviceRequirements r;
  r.required_extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  r.optional_features = {"storageBuffer16BitAccess"};
  return r;
}

DeviceRequirements device_requirements(VkPhysicalDevice pd) {
  DeviceRequirements r = device_requirements();
  if (pd == VK_NULL_HANDLE) {
    r.supported = false;
    r.missing.push_back("physical_device is VK_NULL_HANDLE");
    return r;
  }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  const std::string name = props.deviceName;
  if (props.apiVersion < r.min_api_version)
    r.missing.push_back(name + " supports Vulkan " + version_string(props.apiVersion) + "; vkgmm needs " +
                        version_string(r.min_api_version));
  for (const char* ext : r.required_extensions)
    if (!has_device_extension(pd, ext)) r.missing.push_back(name + " lacks " + ext);
  if (!has_compute_queue(pd)) r.missing.push_back(name + " has no queue family with VK_QUEUE_COMPUTE_BIT");
  r.supported = r.missing.empty();

  // The 16-bit storage struct (core in 1.1) rather than VkPhysicalDeviceVulkan11Features (1.2), so that
  // a 1.1 device is still described correctly; a 1.0 device offers nothing optional.
  if (props.apiVersion >= VK_API_VERSION_1_1) {
    VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.pNext = &s16;
    vkGetPhysicalDeviceFeatures2(pd, &f);
    r.storage_buffer_16bit = s16.storageBuffer16BitAccess == VK_TRUE;
  }
  return r;
}

DeviceRequirements device_requirements(VkInstance instance, VkPhysicalDevice pd, PFN_vkGetInstanceProcAddr gipa) {
  DeviceRequirements r = device_requirements(pd);
  if (!r.supported || instance == VK_NULL_HANDLE || !r.storage_buffer_16bit) return r;
  const MatrixUnits units = query_matrix_units(instance, pd, gipa);
  MatrixFeatures features;
  if (features.query(pd, units, true, device_class(pd))) r.matrix_extension = units.extension;
  return r;
}

}  // namespace vkgmm
