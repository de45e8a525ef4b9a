// The app's instance, debug messenger, device and buffers. It asks vkgmm::device_requirements() which
// extensions to enable and whether the optional 16-bit storage feature is there to turn on.
#include "app_device.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include <vkgmm/requirements.hpp>

namespace app {

void vk(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(r));
}

namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    ++static_cast<AppDevice*>(user)->validation_messages;
    std::fprintf(stderr, "validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

uint32_t find_memory_type(VkPhysicalDevice pd, uint32_t bits, VkMemoryPropertyFlags want) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

}  // namespace

AppDevice::AppDevice(bool validate) {
  // A constructor that throws runs no destructor: what it created so far is released here.
  try {
    create(validate);
  } catch (...) {
    release();
    throw;
  }
}

void AppDevice::create(bool validate) {
  VkApplicationInfo ai{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  ai.pApplicationName = "vkgmm_example_app";
  ai.apiVersion = vkgmm::device_requirements().min_api_version;
  const char* layers[] = {"VK_LAYER_KHRONOS_validation"};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  // Synchronization validation too: it reports a missing or too weak barrier between the app's passes
  // and vkgmm's dispatch, which is what the README's barrier rules are about.
  const VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync;
  VkDebugUtilsMessengerCreateInfoEXT dm{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dm.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dm.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  dm.pfnUserCallback = on_message;
  dm.pUserData = this;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &ai;
  if (validate) {
    features.pNext = &dm;  // dm here too: messages from vkCreateInstance itself count
    ici.pNext = &features;
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = layers;
    ici.enabledExtensionCount = 2;
    ici.ppEnabledExtensionNames = extensions;
  }
  vk(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance (is vulkan-validationlayers installed?)");
  if (validate) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    vk(create ? create(instance, &dm, nullptr, &messenger) : VK_ERROR_EXTENSION_NOT_PRESENT,
       "vkCreateDebugUtilsMessengerEXT");
  }

  // The first device vkgmm can run on.
  uint32_t n = 0;
  vk(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  vk(vkEnumeratePhysicalDevices(instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
  vkgmm::DeviceRequirements req;
  for (VkPhysicalDevice pd : devices) {
    req = vkgmm::device_requirements(pd);
    if (req.supported) {
      physical = pd;
      break;
    }
    for (const std::string& why : req.missing) std::fprintf(stderr, "skipping a device: %s\n", why.c_str());
  }
  if (!physical) throw std::runtime_error("no Vulkan device meets vkgmm's requirements");

  // A queue family with compute; the app's "main" queue would usually also do graphics.
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, fams.data());
  queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < n && queue_family == UINT32_MAX; ++i)
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) queue_family = i;

  // Required extensions as listed; the optional feature when the device has it.
  storage_buffer_16bit = req.storage_buffer_16bit;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = storage_buffer_16bit ? VK_TRUE : VK_FALSE;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f11;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(req.required_extensions.size());
  dci.ppEnabledExtensionNames = req.required_extensions.data();
  vk(vkCreateDevice(physical, &dci, nullptr, &device), "vkCreateDevice");
  vkGetDeviceQueue(device, queue_family, 0, &queue);
}

AppDevice::~AppDevice() { release(); }

void AppDevice::release() noexcept {
  if (device) vkDestroyDevice(device, nullptr);
  if (messenger) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance, messenger, nullptr);
  }
  if (instance) vkDestroyInstance(instance, nullptr);
  device = VK_NULL_HANDLE;
  messenger = VK_NULL_HANDLE;
  instance = VK_NULL_HANDLE;
}

AppDevice::Buffer AppDevice::create_buffer(VkDeviceSize bytes, bool host_visible) {
  Buffer b;
  try {
    fill_buffer(b, bytes, host_visible);
  } catch (...) {
    destroy_buffer(b);  // the buffer without its memory, or the memory unbound or unmapped
    throw;
  }
  return b;
}

void AppDevice::fill_buffer(Buffer& b, VkDeviceSize bytes, bool host_visible) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  // vkgmm binds operands as storage buffers; the copies in and out need the transfer bits.
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  vk(vkCreateBuffer(device, &bci, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements mr;
  vkGetBufferMemoryRequirements(device, b.buffer, &mr);
  const VkMemoryPropertyFlags want = host_visible
                                         ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                         : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  uint32_t type = find_memory_type(physical, mr.memoryTypeBits, want);
  if (type == UINT32_MAX && !host_visible) type = find_memory_type(physical, mr.memoryTypeBits, 0);
  if (type == UINT32_MAX) throw std::runtime_error("no suitable memory type");
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = mr.size;
  mai.memoryTypeIndex = type;
  vk(vkAllocateMemory(device, &mai, nullptr, &b.memory), "vkAllocateMemory");
  vk(vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
  if (host_visible) vk(vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
}

void AppDevice::destroy_buffer(Buffer& b) {
  if (b.buffer) vkDestroyBuffer(device, b.buffer, nullptr);
  if (b.memory) vkFreeMemory(device, b.memory, nullptr);
  b = {};
}

}  // namespace app
