// Creating or wrapping a device into a Context, and tearing it down.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "context_impl.hpp"
#include "device_class.hpp"
#include "matrix_units.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "texel_views.hpp"
#include "vkgmm/requirements.hpp"

namespace vkgmm {

namespace {

const char* env_lookup(const char* name) { return std::getenv(name); }

// The matrix units a context uses: their shape, and the subgroups their pipelines run.
void set_matrix_units(Device& dev, const MatrixUnits& units, MatrixSubgroup subgroup) {
  dev.info.matrix_extension = units.extension;
  dev.info.matrix_m = units.m;
  dev.info.matrix_n = units.n;
  dev.info.matrix_k = units.k;
  dev.info.matrix_subgroup_size = subgroup.size;
  dev.info.matrix_automatic = units.extension && matrix_results_trusted(dev.driver_id);
  dev.matrix_subgroup = subgroup;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  static_cast<ValidationLog*>(user)->add(data && data->pMessage ? data->pMessage : "(no message)");
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
    const std::string what = "device (ContextOptions::device, $VKGMM_DEVICE): ";
    if (std::all_of(want.begin(), want.end(), ::isdigit)) {
      // Digits past the device count are out of range however many there are (nothing overflows). Parsed
      // by hand: std::stoul's helper template would be exported where the compiler does not inline it.
      const std::string digits = want.substr(std::min(want.find_first_not_of('0'), want.size() - 1));
      uint64_t index = 0;
      for (const char d : digits) index = digits.size() <= 9 ? index * 10 + uint64_t(d - '0') : index;
      const bool in_range = digits.size() <= 9 && index < n;
      if (!in_range)
        throw Error(Status::invalid_argument, what + "index " + want + " is out of range (" + std::to_string(n) +
                                                  " devices)");
      return devices[index];
    }
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(), ::tolower);
      return s;
    };
    for (uint32_t i = 0; i < n; ++i)
      if (lower(props[i].deviceName).find(lower(want)) != std::string::npos) return devices[i];
    throw Error(Status::invalid_argument, what + "no device name contains '" + want + "'");
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
  if (dev.device && !submitter.settle()) {
    report_teardown_messages({"vkgmm: a submission still runs after its wait timed out twice; the Context's "
                              "Vulkan objects are leaked rather than destroyed under the device"});
    return;
  }
  if (dev.device) {
    // Only a device vkgmm owns is waited idle: waiting on a borrowed one would need every one of the
    // app's queues locked. vkgmm's own submissions are all complete here (waited or settled above).
    // A context that submitted nothing has nothing to wait for, and RADV's null device (which compiles but
    // cannot run, and crashes in vkDeviceWaitIdle) is one that never submits.
    if (dev.owns && submitter.submitted_any()) vkDeviceWaitIdle(dev.device);
    pipelines.destroy(dev.device);
    const StagingBuffer kept = staging.release();
    if (kept.buffer) vkDestroyBuffer(dev.device, kept.buffer, nullptr);
    if (kept.memory) vkFreeMemory(dev.device, kept.memory, nullptr);
  }
  if (!dev.owns) return;
  dev.destroy();
  // vkDestroyDevice and vkDestroyInstance report leaked objects through the messenger: keep them.
  report_teardown_messages(log.take());
}

std::vector<std::string> ValidationLog::take() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> texts;
  texts.reserve(messages_.size());
  for (Message& m : messages_) texts.push_back(std::move(m.text));
  messages_.clear();
  return texts;
}

void ValidationLog::throw_if_any() {
  std::lock_guard lock(mutex_);
  if (messages_.empty()) return;
  const uint64_t self = thread_serial();
  std::string first;
  size_t count = 0;
  std::vector<Message> others;
  for (Message& m : messages_) {
    if (m.thread != self) others.push_back(std::move(m));
    else if (count++ == 0) first = std::move(m.text);
  }
  messages_ = std::move(others);
  if (count == 0) return;
  throw Error(Status::validation, "validation layer: " + first +
                                      (count > 1 ? " (and " + std::to_string(count - 1) + " more)" : ""));
}

Context::Context(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;
Context::~Context() = default;

Context::Context(const ContextOptions& options) : impl_(std::make_shared<Impl>()) {
  open_owned_device(*impl_, resolve_options(options, env_lookup));
}

Context open_compile_only(const ContextOptions& options) {
  auto impl = std::make_shared<Context::Impl>();
  ResolvedOptions resolved = resolve_options(options, env_lookup);
  resolved.compile_only = true;
  open_owned_device(*impl, std::move(resolved));
  return ContextInternals::adopt(std::move(impl));
}

void open_owned_device(Context::Impl& im, ResolvedOptions options) {
  Device& dev = im.dev;
  dev.owns = true;
  dev.options = std::move(options);
  im.submitter.faults.configure(dev.options.inject_fault);
  const bool validate = dev.options.validate;
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
  dm.pUserData = &im.log;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pNext = debug_utils ? &dm : nullptr;  // also catches messages from instance creation itself
  ici.flags = flags;
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  check_created(vkCreateInstance(&ici, nullptr, &dev.instance), dev.instance, "vkCreateInstance");
  if (debug_utils) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(dev.instance, "vkCreateDebugUtilsMessengerEXT"));
    check_created(create(dev.instance, &dm, nullptr, &dev.messenger), dev.messenger, "vkCreateDebugUtilsMessengerEXT");
  }

  dev.physical = pick_device(dev.instance, dev.options.device);
  dev.queue_family = pick_compute_family(dev.physical);

  const DeviceRequirements req = device_requirements(dev.physical);
  if (!req.supported) throw Error(Status::unsupported, "device: " + req.missing.front());

  // Optional features: enabled when present, never required.
  VkPhysicalDeviceVulkan11Features have11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &have11;
  vkGetPhysicalDeviceFeatures2(dev.physical, &have);
  VkPhysicalDeviceVulkan11Features en11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  en11.storageBuffer16BitAccess = have11.storageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 en{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  en.pNext = &en11;
  en.features.shaderInt64 = have.features.shaderInt64;
  std::vector<const char*> device_extensions(req.required_extensions.begin(), req.required_extensions.end());
  // The matrix units, where the device has every feature gmm's matrix builds need and 16-bit storage is on.
  const MatrixUnits units = query_matrix_units(dev.instance, dev.physical, nullptr, dev.options.matrix_extension);
  MatrixFeatures matrix;
  const bool use_matrix = matrix.query(dev.physical, units, en11.storageBuffer16BitAccess && dev.options.storage16,
                                       device_class(dev.physical));
  if (use_matrix) {
    device_extensions.push_back(units.extension);
    device_extensions.push_back(MatrixFeatures::kSizeControl);
    matrix.link(&en11.pNext);
  }
  // A compile-only context keeps what the driver's compiler made of each pipeline, where it can tell.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (dev.options.compile_only && has_device_extension(dev.physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    executables.pipelineExecutableInfo = VK_TRUE;
    executables.pNext = en11.pNext;
    en11.pNext = &executables;
    device_extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    dev.executable_properties = true;
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = dev.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &en;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(device_extensions.size());
  dci.ppEnabledExtensionNames = device_extensions.data();
  check_created(vkCreateDevice(dev.physical, &dci, nullptr, &dev.device), dev.device, "vkCreateDevice");
  vkGetDeviceQueue(dev.device, dev.queue_family, 0, &dev.queue);
  dev.query();
  im.pipelines.init(dev.device,
                    dev.executable_properties ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                                                    VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR
                                              : 0,
                    dev.options.reverse_subgroups, dev.info.subgroup_size);
  dev.info.storage_buffer_16bit = en11.storageBuffer16BitAccess;
  dev.info.matrix_shapes = units.listed;
  if (use_matrix) set_matrix_units(dev, units, matrix.subgroup);
  im.log.throw_if_any();
}

Context Context::wrap(const BorrowedDevice& d, const ContextOptions& options) {
  // The app enabled the extension device_requirements() named: the option is ignored, not checked, and
  // options() reports no other.
  ContextOptions taken = options;
  taken.matrix_extension.clear();
  ResolvedOptions resolved = resolve_options(taken, env_lookup);
  resolved.matrix_extension.clear();
  if (!d.instance) throw Error(Status::invalid_argument, "BorrowedDevice.instance is null");
  if (!d.physical_device) throw Error(Status::invalid_argument, "BorrowedDevice.physical_device is null");
  if (!d.device) throw Error(Status::invalid_argument, "BorrowedDevice.device is null");
  const DeviceRequirements req = device_requirements(d.physical_device);
  if (!req.supported) throw Error(Status::unsupported, "BorrowedDevice: " + req.missing.front());
  if (d.storage_buffer_16bit && !req.storage_buffer_16bit)
    throw Error(Status::invalid_argument,
                "BorrowedDevice.storage_buffer_16bit is set but the device has no storageBuffer16BitAccess");
  if (d.matrix_units && !d.storage_buffer_16bit)
    throw Error(Status::invalid_argument,
                "BorrowedDevice.matrix_units is set without storage_buffer_16bit (the matrix units read 16-bit "
                "operands from storage buffers)");
  const MatrixUnits units = query_matrix_units(d.instance, d.physical_device, d.get_instance_proc_addr);
  MatrixFeatures features;
  if (d.matrix_units && !features.query(d.physical_device, units, true, device_class(d.physical_device)))
    throw Error(Status::invalid_argument,
                "BorrowedDevice.matrix_units is set but the device offers no matrix units vkgmm can use "
                "(device_requirements(instance, physical_device).matrix_extension is null)");
  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_device, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nf);
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_device, &nf, fams.data());
  if (d.queue_family >= nf || !(fams[d.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    throw Error(Status::invalid_argument, "BorrowedDevice.queue_family = " + std::to_string(d.queue_family) +
                                              " is not a queue family with VK_QUEUE_COMPUTE_BIT");
  auto impl = std::make_shared<Impl>();
  Device& dev = impl->dev;
  dev.owns = false;
  dev.options = std::move(resolved);
  impl->submitter.faults.configure(dev.options.inject_fault);
  // The app's handles, as they are.
  dev.instance = d.instance, dev.physical = d.physical_device, dev.device = d.device;
  dev.queue = d.queue, dev.queue_family = d.queue_family, dev.app_get_instance_proc_addr = d.get_instance_proc_addr;
  dev.query();
  dev.info.matrix_shapes = units.listed;
  impl->pipelines.init(dev.device, 0, dev.options.reverse_subgroups, dev.info.subgroup_size);
  // Only the app knows which optional features it enabled; without its word, the paths that need none.
  dev.info.storage_buffer_16bit = d.storage_buffer_16bit;
  if (d.matrix_units && dev.options.storage16) set_matrix_units(dev, units, features.subgroup);
  return Context(std::move(impl));
}

const DeviceInfo& Context::info() const { return impl_->dev.info; }
uint64_t Context::max_whole_input_bytes(DType t) const {
  const DeviceInfo& info = impl_->dev.info;
  const bool texel = texel_loads_usable(info, impl_->dev.options.texel_loads, t, t);
  // One binding less the slack of a view starting past its aligned binding offset (check_operand_limits).
  const uint64_t binding = info.max_storage_buffer_range - operand_binding_alignment(info);
  return std::max<uint64_t>(binding, texel ? texel_reach_bytes(info, t) : 0);
}
ContextOptions Context::options() const {
  ContextOptions o = to_public(impl_->dev.options);
  o.eager_pipelines = eager_pipelines(impl_->dev.options, impl_->dev.info);  // resolved for this device
  return o;
}
VkDevice Context::device() const { return impl_->dev.device; }

std::vector<std::string> Context::take_validation_messages() { return impl_->log.take(); }

// submit_and_wait: host/submitter.cpp. Buffers: host/buffer.cpp.

}  // namespace vkgmm
