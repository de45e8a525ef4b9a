// Context::Impl: the device vkgmm runs on, shared by buffers, plans and pipelines (internal header).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "faults.hpp"
#include "interface.h"
#include "options.hpp"
#include "vkgmm/context.hpp"

namespace vkgmm {

// Throw an Error naming `what` when r is not VK_SUCCESS (device loss and OOM get their own codes).
void check_vk(VkResult r, const char* what);
const char* vk_result_name(VkResult r);

// The one descriptor layout of every vkgmm pipeline (shaders/interface.h): storage buffers at these
// bindings, pushed with vkCmdPushDescriptorSetKHR.
enum Binding : uint32_t {
  kLhs = VKGMM_BINDING_LHS,
  kRhs = VKGMM_BINDING_RHS,
  kOut = VKGMM_BINDING_OUT,
  kExisting = VKGMM_BINDING_EXISTING,
  kMeta = VKGMM_BINDING_META,
  kNumBindings = VKGMM_NUM_BINDINGS
};
// The plain layout also holds texel views of lhs and rhs (uniform texel buffers), which only the
// VKGMM_TEXEL modules declare and only their pipelines push.
enum TexelBinding : uint32_t {
  kLhsTexel = VKGMM_BINDING_LHS_TEXEL,
  kRhsTexel = VKGMM_BINDING_RHS_TEXEL,
  kNumPlainBindings = VKGMM_NUM_PLAIN_BINDINGS
};
// The split layout (VKGMM_SPLIT modules): operands larger than one binding may address are bound as up
// to kMaxParts parts; part p > 0 of operand o (kLhs..kExisting) is at binding kNumBindings + 3 * o + p - 1.
constexpr uint32_t kMaxParts = VKGMM_MAX_PARTS;
constexpr uint32_t kNumSplitBindings = VKGMM_NUM_SPLIT_BINDINGS;
static_assert(kNumSplitBindings == kNumBindings + 4 * (kMaxParts - 1));
static_assert(uint32_t(kLhsTexel) == uint32_t(kNumBindings) && uint32_t(kNumPlainBindings) == kNumBindings + 2u);
// What the host's layouts declare at `binding`: the plain layout (kNumPlainBindings) or the split one.
inline VkDescriptorType binding_type(uint32_t binding, bool split) {
  const bool texel = !split && (binding == kLhsTexel || binding == kRhsTexel);
  return texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}
inline uint32_t binding_count(bool split) { return split ? kNumSplitBindings : kNumPlainBindings; }

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
  ResolvedOptions options;  // read once, when the Context is made

  // A wrapped app's vkGetInstanceProcAddr (null: the linked loader's), for extension entry points.
  PFN_vkGetInstanceProcAddr app_get_instance_proc_addr = nullptr;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout split_set_layout = VK_NULL_HANDLE;
  VkPipelineLayout split_pipeline_layout = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;

  std::mutex pipelines_mutex;  // guards `pipelines`
  std::map<PipelineKey, VkPipeline> pipelines;

  // Guards the queue, `pending` and `graveyard`. Each submit_and_wait records into a command pool of its
  // own, so recording takes no lock (threads record concurrently, and a record callback may create or
  // destroy vkgmm objects).
  std::mutex queue_mutex;

  std::mutex messages_mutex;
  std::vector<std::string> validation_messages;

  // ----- robustness (host/submit.cpp, host/buffer.cpp) -----
  // Submissions whose wait failed (a timeout, device loss) stay here, still pending, until their fence
  // signals: freeing them earlier would free what the device may still be reading. Buffers destroyed
  // meanwhile wait in `graveyard` too. Both guarded by queue_mutex; reaped by later submissions and,
  // with a bounded wait, at teardown.
  struct Pending {
    VkCommandPool pool;  // holds the submission's command buffer
    VkFence fence;
  };
  std::vector<Pending> pending;
  // A vkgmm buffer's Vulkan objects, destroyed together (destroy_now).
  struct Grave {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkBufferView texel_views[2];
  };
  std::vector<Grave> graveyard;
  std::atomic<bool> lost{false};  // VK_ERROR_DEVICE_LOST was seen: later submissions fail at once
  FaultInjector faults;           // test-only (faults.hpp)

  // vkgmm's own buffers with their sizes (views are checked against them) and the device memory they
  // hold per heap (requests past a heap are refused up front; the resource tests bound the total).
  mutable std::mutex buffers_mutex;
  struct OwnBuffer {
    VkDeviceSize size = 0;
    VkBufferView texel_views[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};  // by texel_format_index (texel_views.hpp)
  };
  std::unordered_map<VkBuffer, OwnBuffer> own_buffers;
  std::atomic<uint64_t> heap_used[VK_MAX_MEMORY_HEAPS] = {};
  std::atomic<int64_t> live_allocations{0};

  // Frees what vkgmm's pending submissions no longer use (queue_mutex held).
  void reap_pending_locked();
  // Waits (bounded by VKGMM_TIMEOUT_S) for every pending submission; false if some still run.
  bool settle_pending();
  // Destroys a buffer, its texel views (own_buffers) and its memory now, or once the pending
  // submissions are done.
  void release_buffer(VkBuffer buffer, VkDeviceMemory memory, VkDeviceSize bytes, uint32_t heap);
  void destroy_now(const Grave& g);

  Impl() = default;
  Impl(const Impl&) = delete;
  ~Impl();

  void init_common();  // after the handles are set: info, layouts, pool
  // `split`: the module uses the split layout (it was built with VKGMM_SPLIT).
  VkPipeline pipeline(const uint32_t* code, size_t words, const std::vector<uint32_t>& constants,
                      bool split = false);
  uint32_t find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags want) const;
  void throw_if_validation_messages();
};

// Validation messages that arrive while a Context is destroyed (vkDestroyDevice and vkDestroyInstance
// report leaked objects) cannot be thrown: they are echoed to stderr and kept process-wide here, where
// the tests collect them. Returns and clears them.
void report_teardown_messages(std::vector<std::string> messages);
std::vector<std::string> take_teardown_messages();

}  // namespace vkgmm
