// Context::Impl: the device vkgmm runs on, shared by buffers, plans and pipelines (internal header).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "vkgmm/context.hpp"

namespace vkgmm {

// Throw an Error naming `what` when r is not VK_SUCCESS (device loss and OOM get their own codes).
void check_vk(VkResult r, const char* what);
const char* vk_result_name(VkResult r);

// The one descriptor layout of every vkgmm pipeline (one source of truth, mirrored in
// shaders/bindings.glsl): storage buffers at these bindings, pushed with vkCmdPushDescriptorSetKHR.
enum Binding : uint32_t { kLhs = 0, kRhs = 1, kOut = 2, kExisting = 3, kMeta = 4, kNumBindings = 5 };
constexpr uint32_t kPushConstantBytes = 128;

// Pipelines are cached by (shader, specialization constants).
struct PipelineKey {
  const uint32_t* code = nullptr;
  std::vector<uint32_t> constants;  // constant_id i gets constants[i]
  bool operator<(const PipelineKey& o) const {
    return code != o.code ? code < o.code : constants < o.constants;
  }
};

struct Context::Impl {
  bool owns_device = false;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  DeviceInfo info;
  VkPhysicalDeviceMemoryProperties memory{};

  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;

  std::mutex pipelines_mutex;  // guards `pipelines`
  std::map<PipelineKey, VkPipeline> pipelines;

  std::mutex queue_mutex;  // guards the queue and the command pool
  VkCommandPool command_pool = VK_NULL_HANDLE;

  std::mutex messages_mutex;
  std::vector<std::string> validation_messages;

  Impl() = default;
  Impl(const Impl&) = delete;
  ~Impl();

  void init_common();  // after the handles are set: info, layouts, pool
  VkPipeline pipeline(const uint32_t* code, size_t words, const std::vector<uint32_t>& constants);
  uint32_t find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags want) const;
  void throw_if_validation_messages();
};

}  // namespace vkgmm
