// Operand views must lie inside their buffers (internal).
#pragma once

#include <initializer_list>
#include <utility>

#include "context_impl.hpp"

namespace vkgmm {

// `bytes` rounded up to whole 32-bit words: the unit in which the packed shaders (no 16-bit storage)
// read and write 16-bit elements.
constexpr VkDeviceSize whole_words(VkDeviceSize bytes) { return (bytes + 3) / 4 * 4; }
// What vkgmm allocates for a buffer of `bytes`: whole 16-byte units (a texel of 4 x 32 bits, or two of
// 4 x 16 bits), so that an operand ending mid-word or mid-texel is still read whole (see create_buffer).
constexpr VkDeviceSize whole_texels(VkDeviceSize bytes) { return (bytes + 15) / 16 * 16; }

// The size of the VkBuffer behind a vkgmm Buffer: what create_buffer was asked for, rounded up to whole
// 16-byte texels (Buffer::size() still reports what was asked), or exactly what the app declared of a borrowed
// one. 0 for an app's own buffer vkgmm does not know, whose size Vulkan cannot tell: past a view's end,
// an app's buffer may have no byte at all.
VkDeviceSize own_buffer_capacity(const Context::Impl& ctx, VkBuffer buffer);
// The same of a buffer already found in the registry.
VkDeviceSize own_buffer_capacity(const OwnBuffer& own);

// Throws Error(invalid_argument) naming `op` and the operand when a view runs past the end of its buffer.
// Exact for buffers made by Context::create_buffer; for the app's own buffers the bound is the buffer's
// memory requirement (its size rounded up to the driver's alignment), the tightest Vulkan can tell.
// Null buffers are skipped (other checks name them).
void check_view_in_buffer(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view);
void check_views_in_buffers(const Context::Impl& ctx, const char* op,
                            std::initializer_list<std::pair<const char*, BufferView>> views);

}  // namespace vkgmm
