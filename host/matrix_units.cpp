#include "matrix_units.hpp"

#include <tuple>

#include "device.hpp"

namespace vkgmm {

namespace {

// VK_KHR_cooperative_matrix's structs and values, for Vulkan headers older than the extension (Debian
// 12's are 1.3.239): the values are the registry's.
constexpr auto kCoopFeaturesKhr = static_cast<VkStructureType>(1000506000);
constexpr auto kCoopPropertiesKhr = static_cast<VkStructureType>(1000506001);
constexpr auto kCoopDevicePropertiesKhr = static_cast<VkStructureType>(1000506002);
// VkPhysicalDeviceCooperativeMatrixPropertiesKHR / ...NV: the same layout.
struct CoopDeviceProperties {
  VkStructureType sType;
  void* pNext;
  VkShaderStageFlags cooperativeMatrixSupportedStages;
};
struct CoopPropertiesKhr {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize;
  int32_t AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  int32_t scope;
};
using CoopPropertiesKhrFn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopPropertiesKhr*);
// Both extensions number the component types and scopes alike.
constexpr int32_t kFloat16 = 0, kFloat32 = 1, kScopeSubgroup = 3;

const char* component_name(int32_t t) {
  switch (t) {
    case 0: return "f16";
    case 1: return "f32";
    case 2: return "f64";
    case 3: return "s8";
    case 4: return "s16";
    case 5: return "s32";
    case 6: return "s64";
    case 7: return "u8";
    case 8: return "u16";
    case 9: return "u32";
    case 10: return "u64";
    case 1000141000: return "bf16";
  }
  return "?";
}
const char* scope_name(int32_t s) {
  switch (s) {
    case 1: return "device";
    case 2: return "workgroup";
    case 3: return "subgroup";
    case 5: return "queue family";
  }
  return "?";
}

struct Shape {
  uint32_t m, n, k;
  int32_t a, b, c, result, scope;
};

std::string shape_text(const char* api, const Shape& s) {
  return std::string(api) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
         component_name(s.a) + "*" + component_name(s.b) + "+" + component_name(s.c) + "->" +
         component_name(s.result) + " " + scope_name(s.scope);
}

// gmm's matrix schedule: f16 inputs, f32 accumulators, a subgroup's matrices; M and N whole chunks of
// 4 columns (its epilogue's stores), K a multiple of 4 (its staging's chunks).
bool usable(const Shape& s) {
  return s.a == kFloat16 && s.b == kFloat16 && s.c == kFloat32 && s.result == kFloat32 && s.scope == kScopeSubgroup &&
         s.m % 4 == 0 && s.n % 4 == 0 && s.k % 4 == 0 && s.m > 0 && s.n > 0 && s.k > 0;
}

// The usable shapes' best: KHR's before NV's, then the largest M x N, then K.
void consider(MatrixUnits& u, const Shape& s, const char* extension, bool khr) {
  if (!usable(s)) return;
  const auto rank = [](bool k, uint64_t m, uint64_t n, uint64_t depth) { return std::make_tuple(k, m * n, depth); };
  if (u.extension && rank(khr, s.m, s.n, s.k) <= rank(u.khr, u.m, u.n, u.k)) return;
  u.extension = extension;
  u.khr = khr;
  u.m = s.m;
  u.n = s.n;
  u.k = s.k;
}

}  // namespace

MatrixUnits query_matrix_units(VkInstance instance, VkPhysicalDevice physical, PFN_vkGetInstanceProcAddr gipa,
                               const std::string& only) {
  const bool khr_wanted = only.empty() || only == "VK_KHR_cooperative_matrix";
  const bool nv_wanted = only.empty() || only == VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  MatrixUnits u;
  if (!gipa) gipa = vkGetInstanceProcAddr;
  // Only the extensions the device has: the loader's entry point for an unknown one may not be safe to call.
  if (has_device_extension(physical, "VK_KHR_cooperative_matrix")) {
    if (auto fn = reinterpret_cast<CoopPropertiesKhrFn>(gipa(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"))) {
      uint32_t count = 0;
      fn(physical, &count, nullptr);
      std::vector<CoopPropertiesKhr> props(count);
      for (auto& p : props) p = CoopPropertiesKhr{kCoopPropertiesKhr, nullptr, 0, 0, 0, 0, 0, 0, 0, 0, 0};
      if (count) fn(physical, &count, props.data());
      props.resize(count);
      for (const auto& p : props) {
        const Shape s{p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.ResultType, p.scope};
        u.listed.push_back(shape_text("KHR", s));
#ifdef VKGMM_HAVE_MATRIX_KHR
        if (khr_wanted) consider(u, s, "VK_KHR_cooperative_matrix", true);
#endif
      }
    }
  }
  if (has_device_extension(physical, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    auto fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        gipa(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    if (fn) {
      uint32_t count = 0;
      fn(physical, &count, nullptr);
      std::vector<VkCooperativeMatrixPropertiesNV> props(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      if (count) fn(physical, &count, props.data());
      props.resize(count);
      for (const auto& p : props) {
        const Shape s{p.MSize, p.NSize, p.KSize, int32_t(p.AType), int32_t(p.BType), int32_t(p.CType), int32_t(p.DType),
                      int32_t(p.scope)};
        u.listed.push_back(shape_text("NV", s));
        if (nv_wanted) consider(u, s, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, false);
      }
    }
  }
  return u;
}

bool matrix_results_trusted(VkDriverId driver) { return driver != VK_DRIVER_ID_NVIDIA_PROPRIETARY; }

MatrixSubgroup choose_matrix_subgroup(const SubgroupLimits& l, uint32_t preferred) {
  MatrixSubgroup g;
  const bool fixed = l.min == l.max && l.min == l.size && l.size > 0;
  const bool can_require = l.required_in_compute && l.size_control && l.min <= l.size && l.size <= l.max;
  if (fixed) {
    g.size = l.size;
  } else if (can_require) {
    g.size = preferred && l.min <= preferred && preferred <= l.max ? preferred : l.size;
    g.required = true;
  } else {
    return {};
  }
  g.full = l.size_control && l.full_subgroups;
  // A size that varies must come in full subgroups: the matrices are the subgroup's.
  if (!fixed && !g.full) return {};
  return g;
}

bool MatrixFeatures::query(VkPhysicalDevice physical, const MatrixUnits& units, bool storage16,
                           const DeviceClass& row) {
  subgroup = {};
  if (!units.extension || !storage16) return false;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical, &props);
  if (props.apiVersion < VK_API_VERSION_1_2 || !has_device_extension(physical, kSizeControl)) return false;
  VkPhysicalDeviceSubgroupSizeControlPropertiesEXT limits{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
  CoopDeviceProperties stages{units.khr ? kCoopDevicePropertiesKhr
                                        : VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV,
                               nullptr, 0};
  limits.pNext = &stages;
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  sub.pNext = &limits;
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &sub;
  vkGetPhysicalDeviceProperties2(physical, &props2);
  if (!(stages.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
      !(sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT))
    return false;
  coop = {};
  coop.sType = units.khr ? kCoopFeaturesKhr : VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  v12 = VkPhysicalDeviceVulkan12Features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  size_control = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  v12.pNext = &coop;
  coop.pNext = &size_control;
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f.pNext = &v12;
  vkGetPhysicalDeviceFeatures2(physical, &f);
  SubgroupLimits l;
  l.size = sub.subgroupSize;
  l.min = limits.minSubgroupSize;
  l.max = limits.maxSubgroupSize;
  l.required_in_compute = (limits.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  l.size_control = size_control.subgroupSizeControl;
  l.full_subgroups = size_control.computeFullSubgroups;
  const MatrixSubgroup g = choose_matrix_subgroup(l, row.matrix_subgroup);
  // A workgroup of the class's matrix subgroups, full (the most a matrix block takes), must be allowed:
  // every device known to have matrix units allows 16 or more.
  if (!g.size || limits.maxComputeWorkgroupSubgroups < row.matrix_subgroups)
    return false;
  if (!(coop.cooperativeMatrix && v12.shaderFloat16 && v12.vulkanMemoryModel && v12.vulkanMemoryModelDeviceScope))
    return false;
  subgroup = g;
  return true;
}

void MatrixFeatures::link(void** tail) {
  VkPhysicalDeviceVulkan12Features on{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  on.shaderFloat16 = VK_TRUE;
  on.vulkanMemoryModel = VK_TRUE;
  on.vulkanMemoryModelDeviceScope = VK_TRUE;
  v12 = on;
  coop.cooperativeMatrix = VK_TRUE;
  coop.cooperativeMatrixRobustBufferAccess = VK_FALSE;
  // Only what the chosen subgroups use: a fixed-size device may lack either.
  size_control = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  size_control.subgroupSizeControl = subgroup.required || subgroup.full;
  size_control.computeFullSubgroups = subgroup.full;
  size_control.pNext = *tail;
  coop.pNext = &size_control;
  v12.pNext = &coop;
  *tail = &v12;
}

}  // namespace vkgmm
