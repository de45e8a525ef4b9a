// Texel views of vkgmm's own buffers: how the VKGMM_TEXEL modules read lhs and rhs (internal).
//
// Drivers that run shaders on the CPU gather texels with vector instructions but load storage buffers
// one lane at a time: on lavapipe a uniform texel buffer streams ~3x faster than a storage buffer (and
// than vkCmdCopyBuffer). On such devices each vkgmm Buffer gets one view per texel format over its whole
// size when it is created, and loses them with the buffer; an app's own VkBuffers have no views (vkgmm
// cannot know when such a buffer dies), so plans read them as storage buffers. GPUs keep storage
// buffers: the gain was measured on a CPU driver only, and the shared-memory schedule's scalar loads
// would fetch whole texels for one element.
//
// A view also reaches past maxStorageBufferRange (maxTexelBufferElements texels: 2 GiB of f32 on
// lavapipe): inputs too large for one storage binding are read whole through it rather than bound in
// parts (PlanCore::set_operands, Kernel::texel_unsplit).
#pragma once

#include "context_impl.hpp"

namespace vkgmm {

// Four elements per texel: [0] for 32-bit element types, [1] for 16-bit ones (unsigned formats: the
// shader decodes the bits itself, so one sampler type serves every element type).
constexpr VkFormat kTexelFormats[2] = {VK_FORMAT_R32G32B32A32_UINT, VK_FORMAT_R16G16B16A16_UINT};
inline uint32_t texel_format_index(DType t) { return dtype_size(t) == 4 ? 0 : 1; }

// Fills DeviceInfo's texel fields: which formats the device reads as uniform texel buffers, and its
// maxTexelBufferElements.
void query_texel_support(VkPhysicalDevice physical, const VkPhysicalDeviceLimits& limits, DeviceInfo& info);

// The views of a new vkgmm buffer of `bytes` (null on GPUs, where the format is unsupported, or where the
// buffer holds no whole texel); they cover the buffer from offset 0, up to maxTexelBufferElements texels.
// Throws with none left behind when one cannot be created.
void create_texel_views(const Device& dev, VkBuffer buffer, VkDeviceSize bytes, VkBufferView (&views)[2]);

// True on a CPU device that reads both element types through texel views, where `allowed`
// (ContextOptions::texel_loads): plans then build their VKGMM_TEXEL pipeline.
bool texel_loads_usable(const DeviceInfo& info, bool allowed, DType a, DType b);

// The bytes of an input of type t that a view reaches from its buffer's start (maxTexelBufferElements
// texels, and element indices below 2^32): how large lhs and rhs may be when they are read through
// texel views instead of storage-buffer bindings (PlanCore::set_operands).
uint64_t texel_reach_bytes(const DeviceInfo& info, DType t);

// Both inputs through texel views, or neither: when lhs (`lhs_count` elements of lhs_t) and rhs both
// have one, fills `texels` and replaces the pushed element offsets with theirs (counted from the
// buffer's start); else leaves them and sets texels to null. An operand has none when its buffer is not
// vkgmm's, its offset is not a whole number of elements, or its elements run past the view. What gmm's
// and tgmm's plans bind for a VKGMM_TEXEL pipeline.
void bind_texel_inputs(Context::Impl& ctx, const BufferView& lhs, DType lhs_t, uint64_t lhs_count,
                       const BufferView& rhs, DType rhs_t, uint64_t rhs_count, VkBufferView (&texels)[2],
                       uint32_t& lhs_off, uint32_t& rhs_off);

}  // namespace vkgmm
