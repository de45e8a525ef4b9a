// Where vkgmm's own buffers live (Context::create_buffer): mapped memory the host writes directly, or, on
// a discrete GPU whose host-visible device memory is a small window (no resizable BAR), device-local
// memory that Buffer::upload and download reach through a staging copy.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

namespace vkgmm {

// Buffers below this many bytes stay mapped wherever they can (plans' metadata, small outputs): a staged
// upload is a submission of its own.
constexpr VkDeviceSize kStagedBufferBytes = VkDeviceSize(1) << 20;

struct BufferMemory {
  uint32_t type = UINT32_MAX;  // a memory type index; UINT32_MAX: none fits
  bool mapped = true;          // host-visible and coherent, mapped for good; else staged
};

// The memory type for a buffer of `bytes` whose VkMemoryRequirements allow `type_bits`:
//  - host-visible, coherent device-local memory where its heap is at least half of the largest
//    device-local heap (a resizable BAR, an integrated GPU, a CPU driver), mapped;
//  - else, for a buffer of kStagedBufferBytes or more where staging is possible (vkgmm's own device and queue),
//    device-local memory, staged: a host-visible window of a few hundred MiB would cap every Array,
//    workspace and weight upload at that size, and system memory would be read over the bus;
//  - else host-visible coherent memory, device-local first, mapped.
// `force_staged` (test-only) stages every buffer in a device-local type, host-visible or not.
BufferMemory choose_buffer_memory(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits,
                                  VkDeviceSize bytes, bool can_stage, bool force_staged);

// Where a buffer goes when `first` is the host's small window on device memory (a mapped device-local type
// whose heap is under half the largest device-local heap) and the window cannot take it: device-local
// memory, staged, where staging is possible, else mapped system memory. {} (type UINT32_MAX) for any other
// `first`: there the heap that refused it was the device's own.
BufferMemory window_fallback(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits, bool can_stage,
                             BufferMemory first);

// The largest heap a buffer could come from: of a mapped type or, where staging is possible, of a
// device-local one (Context::create_buffer refuses a larger request before any Vulkan call).
VkDeviceSize largest_buffer_heap(const VkPhysicalDeviceMemoryProperties& memory, bool can_stage);

// The host-visible coherent type for staging copies (host-cached first: downloads read it).
uint32_t staging_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t type_bits);

}  // namespace vkgmm
