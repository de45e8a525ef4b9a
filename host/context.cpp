// Creating or wrapping a device, buffers, and the submit-and-wait helper.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "context_impl.hpp"
#include "interface.hpp"
#include "texel_views.hpp"
#include "vkgmm/requirements.hpp"

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
  if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
    throw Error(Status::out_of_memory, msg);
  if (r == VK_ERROR_DEVICE_LOST || r == VK_TIMEOUT) throw Error(Status::device_lost, msg);
  throw Error(Status::vulkan_error, msg);
}

namespace {

const char* env_lookup(const char* name) { return std::getenv(name); }

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  auto* impl = static_cast<Context::Impl*>(user);
  std::lock_guard lock(impl->messages_mutex);
  impl->validation_messages.emplace_back(data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool has_instance_extension(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

// VKGMM_DEVICE / ContextOptions::device: an index, or a case-insensitive substring of the name.
VkPhysicalDevice pick_device(VkInstance instance, const std::string& want) {
  uint32_t n = 0;
  check_vk(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  check_vk(vkEnumeratePhysicalDevices(instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
  if (devices.empty()) throw Error(Status::unsupported, "no Vulkan device found (is mesa-vulkan-drivers installed?)");
  std::vector<VkPhysicalDeviceProperties> props(n);
  for (uint32_t i = 0; i < n; ++i) vkGetPhysicalDeviceProperties(devices[i], &props[i]);
  if (!want.empty()) {
    if (std::all_of(want.begin(), want.end(), ::isdigit)) {
      size_t idx = std::stoul(want);
      if (idx >= n)
        throw Error(Status::invalid_argument, "device: index " + want + " is out of range (" + std::to_string(n) +
                                                  " devices)");
      return devices[idx];
    }
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(), ::tolower);
      return s;
    };
    for (uint32_t i = 0; i < n; ++i)
      if (lower(props[i].deviceName).find(lower(want)) != std::string::npos) return devices[i];
    throw Error(Status::invalid_argument, "device: no device name contains '" + want + "'");
  }
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; ++i)
    if (type_rank(props[i].deviceType) < type_rank(props[best].deviceType)) best = i;
  return devices[best];
}

uint32_t pick_compute_family(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fams.data());
  // Prefer a compute family without graphics (async compute), else any with compute.
  for (uint32_t i = 0; i < n; ++i)
    if ((fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return i;
  for (uint32_t i = 0; i < n; ++i)
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
  throw Error(Status::unsupported, "the device has no compute queue");
}

}  // namespace

Context::Impl::~Impl() {
  // Work whose wait timed out may still run: wait for it once more, bounded. If it still runs, destroying
  // what it uses would be undefined behaviour: leak the device's objects rather than crash or hang.
  if (device && !settle_pending()) {
    report_teardown_messages({"vkgmm: a submission still runs after its wait timed out twice; the Context's "
                              "Vulkan objects are leaked rather than destroyed under the device"});
    return;
  }
  if (device) {
    // Only a device vkgmm owns is waited idle: waiting on a borrowed one would need every one of the
    // app's queues locked. vkgmm's own submissions are all complete here (waited or settled above).
    if (owns_device) vkDeviceWaitIdle(device);
    for (auto& [key, p] : pipelines) vkDestroyPipeline(device, p, nullptr);
    if (pipeline_cache) vkDestroyPipelineCache(device, pipeline_cache, nullptr);
    if (pipeline_layout) vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
    if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
    if (split_pipeline_layout) vkDestroyPipelineLayout(device, split_pipeline_layout, nullptr);
    if (split_set_layout) vkDestroyDescriptorSetLayout(device, split_set_layout, nullptr);
  }
  if (!owns_device) return;
  if (device) vkDestroyDevice(device, nullptr);
  if (messenger) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance, messenger, nullptr);
  }
  if (instance) vkDestroyInstance(instance, nullptr);
  // vkDestroyDevice and vkDestroyInstance report leaked objects through the messenger: keep them.
  report_teardown_messages(std::move(validation_messages));
}

void Context::Impl::init_common() {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(physical, &props);
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  const auto& lim = props.properties.limits;
  info.name = props.properties.deviceName;
  info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
  info.type = props.properties.deviceType;
  info.api_version = props.properties.apiVersion;
  info.subgroup_size = subgroup.subgroupSize;
  info.max_shared_memory = lim.maxComputeSharedMemorySize;
  info.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
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

  // Two layouts, both pushed with vkCmdPushDescriptorSetKHR: the plain one (storage buffers and the
  // inputs' texel views) and the split one of storage buffers for operands bound in parts
  // (kNumSplitBindings must stay within maxPushDescriptors, >= 32).
  auto make_layouts = [&](bool split, VkDescriptorSetLayout& set, VkPipelineLayout& layout) {
    VkDescriptorSetLayoutBinding bindings[kNumSplitBindings];
    const uint32_t count = binding_count(split);
    for (uint32_t b = 0; b < count; ++b)
      bindings[b] = {b, binding_type(b, split), 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    sl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    sl.bindingCount = count;
    sl.pBindings = bindings;
    check_vk(vkCreateDescriptorSetLayout(device, &sl, nullptr, &set), "vkCreateDescriptorSetLayout");
    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, abi::kPushConstantBytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &pc;
    check_vk(vkCreatePipelineLayout(device, &pl, nullptr, &layout), "vkCreatePipelineLayout");
  };
  make_layouts(false, set_layout, pipeline_layout);
  make_layouts(true, split_set_layout, split_pipeline_layout);
  VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  check_vk(vkCreatePipelineCache(device, &pci, nullptr, &pipeline_cache), "vkCreatePipelineCache");
}

uint32_t Context::Impl::find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

void Context::Impl::throw_if_validation_messages() {
  std::lock_guard lock(messages_mutex);
  if (validation_messages.empty()) return;
  std::string first = validation_messages.front();
  size_t count = validation_messages.size();
  validation_messages.clear();
  throw Error(Status::validation, "validation layer: " + first +
                                      (count > 1 ? " (and " + std::to_string(count - 1) + " more)" : ""));
}

Context::Context(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;
Context::~Context() = default;

Context::Context(const ContextOptions& options) : impl_(std::make_shared<Impl>()) {
  Impl& im = *impl_;
  im.owns_device = true;
  im.options = resolve_options(options, env_lookup);
  im.faults.configure(im.options.inject_fault);
  const bool validate = im.options.validate;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  std::vector<const char*> layers, extensions;
  if (validate) {
    if (!has_layer(layer))
      throw Error(Status::unsupported, "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                                       "(apt-get install vulkan-validationlayers)");
    layers.push_back(layer);
  }
  const bool debug_utils = validate && has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkInstanceCreateFlags flags = 0;
  if (has_instance_extension("VK_KHR_portability_enumeration")) {
    extensions.push_back("VK_KHR_portability_enumeration");
    flags |= 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkgmm";
  app.pEngineName = "vkgmm";
  app.apiVersion = VK_API_VERSION_1_2;
  VkDebugUtilsMessengerCreateInfoEXT dm{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dm.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dm.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  dm.pfnUserCallback = on_debug_message;
  dm.pUserData = &im;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pNext = debug_utils ? &dm : nullptr;  // also catches messages from instance creation itself
  ici.flags = flags;
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  check_vk(vkCreateInstance(&ici, nullptr, &im.instance), "vkCreateInstance");
  if (debug_utils) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(im.instance, "vkCreateDebugUtilsMessengerEXT"));
    check_vk(create(im.instance, &dm, nullptr, &im.messenger), "vkCreateDebugUtilsMessengerEXT");
  }

  im.physical = pick_device(im.instance, im.options.device);
  im.queue_family = pick_compute_family(im.physical);

  const DeviceRequirements req = device_requirements(im.physical);
  if (!req.supported) throw Error(Status::unsupported, "device: " + req.missing.front());

  // Optional features: enabled when present, never required.
  VkPhysicalDeviceVulkan11Features have11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &have11;
  vkGetPhysicalDeviceFeatures2(im.physical, &have);
  VkPhysicalDeviceVulkan11Features en11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  en11.storageBuffer16BitAccess = have11.storageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 en{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  en.pNext = &en11;
  en.features.shaderInt64 = have.features.shaderInt64;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = im.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &en;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(req.required_extensions.size());
  dci.ppEnabledExtensionNames = req.required_extensions.data();
  check_vk(vkCreateDevice(im.physical, &dci, nullptr, &im.device), "vkCreateDevice");
  vkGetDeviceQueue(im.device, im.queue_family, 0, &im.queue);
  im.init_common();
  im.info.storage_buffer_16bit = en11.storageBuffer16BitAccess;
  im.throw_if_validation_messages();
}

Context Context::wrap(const BorrowedDevice& d, const ContextOptions& options) {
  ResolvedOptions resolved = resolve_options(options, env_lookup);
  if (!d.instance) throw Error(Status::invalid_argument, "BorrowedDevice.instance is null");
  if (!d.physical_device) throw Error(Status::invalid_argument, "BorrowedDevice.physical_device is null");
  if (!d.device) throw Error(Status::invalid_argument, "BorrowedDevice.device is null");
  const DeviceRequirements req = device_requirements(d.physical_device);
  if (!req.supported) throw Error(Status::unsupported, "BorrowedDevice: " + req.missing.front());
  if (d.storage_buffer_16bit && !req.storage_buffer_16bit)
    throw Error(Status::invalid_argument,
                "BorrowedDevice.storage_buffer_16bit is set but the device has no storageBuffer16BitAccess");
  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_device, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nf);
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_device, &nf, fams.data());
  if (d.queue_family >= nf || !(fams[d.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    throw Error(Status::invalid_argument, "BorrowedDevice.queue_family = " + std::to_string(d.queue_family) +
                                              " is not a queue family with VK_QUEUE_COMPUTE_BIT");
  auto impl = std::make_shared<Impl>();
  impl->owns_device = false;
  impl->options = std::move(resolved);
  impl->faults.configure(impl->options.inject_fault);
  impl->instance = d.instance;
  impl->physical = d.physical_device;
  impl->device = d.device;
  impl->queue = d.queue;
  impl->queue_family = d.queue_family;
  impl->app_get_instance_proc_addr = d.get_instance_proc_addr;
  impl->init_common();
  // Only the app knows which optional features it enabled; without its word, the paths that need none.
  impl->info.storage_buffer_16bit = d.storage_buffer_16bit;
  return Context(std::move(impl));
}

const DeviceInfo& Context::info() const { return impl_->info; }
ContextOptions Context::options() const { return to_public(impl_->options); }
VkDevice Context::device() const { return impl_->device; }

std::vector<std::string> Context::take_validation_messages() {
  std::lock_guard lock(impl_->messages_mutex);
  return std::exchange(impl_->validation_messages, {});
}

// submit_and_wait: host/submit.cpp. Buffers: host/buffer.cpp.

}  // namespace vkgmm
