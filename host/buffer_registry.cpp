// The registry of vkgmm's own buffers and the memory they hold (buffer_registry.hpp).
#include "buffer_registry.hpp"

namespace vkgmm {

bool BufferRegistry::add(VkBuffer buffer, const OwnBuffer& own) {
  std::lock_guard lock(mutex_);
  return buffers_.emplace(buffer, own).second;
}

OwnBuffer BufferRegistry::remove(VkBuffer buffer) {
  std::lock_guard lock(mutex_);
  OwnBuffer own;
  if (auto it = buffers_.find(buffer); it != buffers_.end()) {
    own = it->second;
    buffers_.erase(it);
  }
  return own;
}

std::optional<OwnBuffer> BufferRegistry::find(VkBuffer buffer) const {
  std::lock_guard lock(mutex_);
  if (auto it = buffers_.find(buffer); it != buffers_.end()) return it->second;
  return std::nullopt;
}

bool BufferRegistry::charge(uint32_t heap, VkDeviceSize bytes, VkDeviceSize heap_size, uint64_t& held) {
  // What vkgmm already holds counts too: the heap is the device's memory, not a per-request limit.
  const uint64_t used = heap_used_[heap].fetch_add(bytes) + bytes;
  held = used - bytes;
  if (used <= heap_size) return true;
  heap_used_[heap] -= bytes;
  return false;
}

}  // namespace vkgmm
