// The example app's own Vulkan setup: what an engine already has before it adds vkgmm. The only vkgmm
// call here is device_requirements(), asked before the device is created.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <stdexcept>
#include <string>

namespace app {

// Throws with `what` when a Vulkan call fails.
void vk(VkResult r, const char* what);

struct AppDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  bool storage_buffer_16bit = false;  // enabled on `device` (the device offered it)
  std::atomic<int> validation_messages{0};

  // validate: VK_LAYER_KHRONOS_validation plus a messenger counting every warning and error.
  explicit AppDevice(bool validate);
  AppDevice(const AppDevice&) = delete;
  ~AppDevice();

  // A buffer with its own memory, host-visible (staging) or device-local (the app's GPU data).
  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;  // host-visible buffers only
  };
  Buffer create_buffer(VkDeviceSize bytes, bool host_visible);
  void destroy_buffer(Buffer& b);

 private:
  void create(bool validate);
  void fill_buffer(Buffer& b, VkDeviceSize bytes, bool host_visible);
  void release() noexcept;  // the destructor's work, also done when the constructor throws part-way
};

}  // namespace app
