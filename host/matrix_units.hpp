// The device's matrix units as vkgmm sees them: the cooperative-matrix shapes it lists, and the one
// extension and shape gmm's matrix schedule takes (internal).
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "device_class.hpp"

namespace vkgmm {

struct MatrixUnits {
  // Every shape the device lists, as text ("KHR 16x16x16 f16*f16+f32->f32 subgroup"), for vkgmm info.
  std::vector<std::string> listed;
  // The extension for f16 x f16 + f32 -> f32 at subgroup scope whose build vkgmm has (nullptr: none),
  // preferring VK_KHR_cooperative_matrix, and its largest such shape.
  const char* extension = nullptr;
  bool khr = false;
  uint32_t m = 0, n = 0, k = 0;
};

// Queries the physical device (its extensions, then the listed shapes of those it has). `gipa` is the
// instance's vkGetInstanceProcAddr; `only`, where not empty, the one extension to consider
// (ContextOptions::matrix_extension): the others' shapes are still listed.
MatrixUnits query_matrix_units(VkInstance instance, VkPhysicalDevice physical, PFN_vkGetInstanceProcAddr gipa,
                               const std::string& only = {});

// Whether vkgmm's matrix builds give the reference's results on a driver, as far as a run of its tests
// has shown: not on NVIDIA's proprietary driver (an H200 with driver 580.159.04 gave wrong products for
// every f16 gmm on the matrix units, KHR build; docs/gpu-results.md). DeviceInfo::matrix_automatic.
bool matrix_results_trusted(VkDriverId driver);

// How the matrix builds' pipelines run their subgroups.
struct MatrixSubgroup {
  uint32_t size = 0;      // lanes per subgroup (0: none usable)
  bool required = false;  // the pipelines require `size` (VkPipelineShaderStageRequiredSubgroupSizeCreateInfo)
  bool full = false;      // ... and full subgroups (VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT)
};

// What a device says of its subgroups (VkPhysicalDeviceSubgroupSizeControlProperties and features).
struct SubgroupLimits {
  uint32_t size = 0;  // VkPhysicalDeviceSubgroupProperties::subgroupSize, the default
  uint32_t min = 0, max = 0;
  bool required_in_compute = false;  // requiredSubgroupSizeStages has the compute stage
  bool size_control = false, full_subgroups = false;  // the subgroupSizeControl and computeFullSubgroups features
};

// The subgroup size for the matrix builds: `preferred` (the device class's, host/device_class.hpp; 0 for
// the default) where pipelines may require it; the one size where the device has only one (NVK, NVIDIA:
// 32; no pipeline needs to ask for it, and none may where the compute stage takes no required size);
// else the default size, required, so that it cannot vary. Every subgroup full where the device can
// promise it; a device whose size varies must also promise that. size 0 where none of this holds.
MatrixSubgroup choose_matrix_subgroup(const SubgroupLimits& limits, uint32_t preferred);

// The features gmm's matrix builds need beside the extension's own (cooperativeMatrix): 16-bit storage,
// shaderFloat16, the Vulkan memory model at device scope (glslang declares it for these extensions), and
// subgroups of one size, full, in compute pipelines (VK_EXT_subgroup_size_control; choose_matrix_subgroup).
struct MatrixFeatures {
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR / ...NV: the same layout (sType, pNext, cooperativeMatrix,
  // cooperativeMatrixRobustBufferAccess).
  struct Coop {
    VkStructureType sType;
    void* pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
  } coop{};
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  // The subgroups the builds run (query sets it).
  MatrixSubgroup subgroup;
  // Asks the device; true where everything is there (storage16: whether 16-bit storage is), with the
  // subgroup size the device class `row` names where the device allows it, and workgroups of as many
  // subgroups as the class's matrix block spreads over.
  bool query(VkPhysicalDevice physical, const MatrixUnits& units, bool storage16, const DeviceClass& row);
  // Links v12 (shaderFloat16 and the memory model on, nothing else), coop (cooperativeMatrix on) and
  // size_control (the features `subgroup` uses) into a device create-info chain at `tail` (the pNext that
  // pointed on now points to v12).
  void link(void** tail);
  // The device extensions they need: the matrix extension and VK_EXT_subgroup_size_control.
  static constexpr const char* kSizeControl = "VK_EXT_subgroup_size_control";
};

}  // namespace vkgmm
