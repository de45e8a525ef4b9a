// vkgmm's own buffers (internal; a part of Context::Impl): their sizes, so views of them are checked
// exactly; their texel views; and the device memory they hold per heap, so a request past a heap is
// refused up front.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace vkgmm {

struct OwnBuffer {
  VkDeviceSize size = 0;
  VkBufferView texel_views[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};  // by texel_format_index (texel_views.hpp)
  bool borrowed = false;  // an app's VkBuffer (Context::borrow_buffer): exactly `size`, not padded
  // Made with VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT: a workspace here can hold the indirect grid's command.
  bool indirect = false;
  // In device-local memory that upload and download reach through staging copies (buffer_memory.hpp).
  bool staged = false;
  uint32_t memory_type = UINT32_MAX;  // the memory type vkgmm allocated it in; UINT32_MAX: borrowed
};

class BufferRegistry {
 public:
  // False (nothing added) when the buffer is known already.
  bool add(VkBuffer buffer, const OwnBuffer& own);
  // Forgets the buffer and returns what it had ({} when it is not vkgmm's).
  OwnBuffer remove(VkBuffer buffer);
  std::optional<OwnBuffer> find(VkBuffer buffer) const;

  // Counts `bytes` against `heap` unless that takes vkgmm's buffers past `heap_size`: then counts
  // nothing and returns false, with `held` what vkgmm's buffers already held there.
  bool charge(uint32_t heap, VkDeviceSize bytes, VkDeviceSize heap_size, uint64_t& held);
  void refund(uint32_t heap, VkDeviceSize bytes) { heap_used_[heap] -= bytes; }
  // Device memory vkgmm's buffers hold, every heap's (the resource tests bound it).
  uint64_t held_bytes() const {
    uint64_t sum = 0;
    for (const auto& h : heap_used_) sum += h.load();
    return sum;
  }
  // Device allocations vkgmm holds (the resource tests bound them).
  void count_allocation(int delta) { live_allocations_ += delta; }
  int64_t live_allocations() const { return live_allocations_.load(); }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<VkBuffer, OwnBuffer> buffers_;
  std::atomic<uint64_t> heap_used_[VK_MAX_MEMORY_HEAPS] = {};
  std::atomic<int64_t> live_allocations_{0};
};

}  // namespace vkgmm
