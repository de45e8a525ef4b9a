// The host-visible buffers that staged uploads and downloads copy through (buffer.cpp's staged_copy),
// kept for the next copy (internal; a part of Context::Impl). Allocating one per copy would have the
// driver allocate, and zero, up to a staging piece (64 MiB) on every upload: a program that uploads its
// inputs each call on a GPU without resizable BAR would pay that each time. A Context keeps one idle
// staging buffer, the largest it made; copies from several threads at once make more, and the larger one
// returned is kept.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>

namespace vkgmm {

struct StagingBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t* mapped = nullptr;  // the whole buffer, mapped for its lifetime
  VkDeviceSize bytes = 0;
};

class StagingCache {
 public:
  // The kept buffer where it holds at least `bytes` (it is the caller's until given back), else none: the
  // caller makes one.
  StagingBuffer take(VkDeviceSize bytes) {
    std::lock_guard lock(mutex_);
    if (!kept_.buffer || kept_.bytes < bytes) return {};
    return std::exchange(kept_, {});
  }
  // A buffer whose copies have all completed: kept if larger than the one kept. Returns the one not
  // kept, for the caller to destroy.
  StagingBuffer give_back(StagingBuffer b) {
    std::lock_guard lock(mutex_);
    if (b.bytes > kept_.bytes) std::swap(b, kept_);
    return b;
  }
  // The kept buffer, for teardown (after the device's work is done).
  StagingBuffer release() {
    std::lock_guard lock(mutex_);
    return std::exchange(kept_, {});
  }
  // The kept buffer, still kept, and how many were made (the tests' view).
  StagingBuffer kept() {
    std::lock_guard lock(mutex_);
    return kept_;
  }
  void count_made() { made_.fetch_add(1); }
  uint64_t made() const { return made_.load(); }

 private:
  std::mutex mutex_;
  StagingBuffer kept_;
  std::atomic<uint64_t> made_{0};
};

}  // namespace vkgmm
