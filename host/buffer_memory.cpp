// The choice of memory for vkgmm's own buffers (buffer_memory.hpp).
#include "buffer_memory.hpp"

#include <algorithm>

namespace vkgmm {

namespace {

constexpr VkMemoryPropertyFlags kMapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;

// The first type allowed by type_bits with every flag of `want` (and none of `avoid`).
uint32_t first_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t type_bits, VkMemoryPropertyFlags want,
                    VkMemoryPropertyFlags avoid = 0) {
  for (uint32_t t = 0; t < m.memoryTypeCount; ++t) {
    const VkMemoryPropertyFlags f = m.memoryTypes[t].propertyFlags;
    if ((type_bits & (1u << t)) && (f & want) == want && (f & avoid) == 0) return t;
  }
  return UINT32_MAX;
}

VkDeviceSize heap_of(const VkPhysicalDeviceMemoryProperties& m, uint32_t type) {
  return m.memoryHeaps[m.memoryTypes[type].heapIndex].size;
}

VkDeviceSize largest_local_heap(const VkPhysicalDeviceMemoryProperties& m) {
  VkDeviceSize largest = 0;
  for (uint32_t h = 0; h < m.memoryHeapCount; ++h)
    if (m.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) largest = std::max(largest, m.memoryHeaps[h].size);
  return largest;
}

}  // namespace

BufferMemory choose_buffer_memory(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits,
                                  VkDeviceSize bytes, bool can_stage, bool force_staged) {
  const uint32_t local = first_type(memory, type_bits, kLocal);
  if (force_staged && local != UINT32_MAX) return {local, false};
  const uint32_t mapped_local = first_type(memory, type_bits, kMapped | kLocal);
  if (mapped_local != UINT32_MAX && heap_of(memory, mapped_local) >= largest_local_heap(memory) / 2)
    return {mapped_local, true};
  if (can_stage && bytes >= kStagedBufferBytes) {
    // Device-local memory outside the host's window first (the window is better left to small buffers).
    const uint32_t unmapped = first_type(memory, type_bits, kLocal, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    if (unmapped != UINT32_MAX) return {unmapped, false};
  }
  if (mapped_local != UINT32_MAX) return {mapped_local, true};
  return {first_type(memory, type_bits, kMapped), true};
}

BufferMemory window_fallback(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits, bool can_stage,
                             BufferMemory first) {
  if (first.type == UINT32_MAX || !first.mapped || !(memory.memoryTypes[first.type].propertyFlags & kLocal) ||
      heap_of(memory, first.type) >= largest_local_heap(memory) / 2)
    return {};
  if (can_stage) {
    const uint32_t unmapped = first_type(memory, type_bits, kLocal, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    if (unmapped != UINT32_MAX) return {unmapped, false};
  }
  return {first_type(memory, type_bits, kMapped, kLocal), true};
}

VkDeviceSize largest_buffer_heap(const VkPhysicalDeviceMemoryProperties& memory, bool can_stage) {
  VkDeviceSize largest = 0;
  for (uint32_t t = 0; t < memory.memoryTypeCount; ++t) {
    const VkMemoryPropertyFlags f = memory.memoryTypes[t].propertyFlags;
    if ((f & kMapped) == kMapped || (can_stage && (f & kLocal))) largest = std::max(largest, heap_of(memory, t));
  }
  return largest;
}

uint32_t staging_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits) {
  const uint32_t cached = first_type(memory, type_bits, kMapped | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  return cached != UINT32_MAX ? cached : first_type(memory, type_bits, kMapped);
}

}  // namespace vkgmm
