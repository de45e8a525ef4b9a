#include "texel_views.hpp"

#include <algorithm>

#include "operands.hpp"

namespace vkgmm {

namespace {
constexpr VkDeviceSize kTexelBytes[2] = {16, 8};

// Whether vkgmm reads elements of texel format f through views on this device: CPU devices only (see
// texel_views.hpp), where the format is supported.
bool format_used(const DeviceInfo& info, uint32_t f) {
  if (info.type != VK_PHYSICAL_DEVICE_TYPE_CPU) return false;
  return f == 0 ? info.texel_loads_32bit : info.texel_loads_16bit;
}

// `count` elements of type t at `view` through its buffer's texel view: the view (null if none, see
// bind_texel_inputs) and the element offset of the first element from the buffer's start.
struct TexelOperand {
  VkBufferView view = VK_NULL_HANDLE;
  uint32_t element_offset = 0;
};

TexelOperand texel_operand(Context::Impl& ctx, const BufferView& view, DType t, uint64_t count) {
  // Block formats are read as 32-bit words (shaders/quant.glsl): the offset counts words, and is a whole
  // texel (4 words), which quant.glsl's q_word_run relies on to place its runs in texels.
  if (is_quantized(t)) {
    if (view.offset % 16 != 0) return {};
    count = (storage_bytes(t, count) + 3) / 4;
    t = DType::f32;
  }
  const uint32_t f = texel_format_index(t);
  const VkDeviceSize esize = dtype_size(t);
  VkBufferView v = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;  // what the view covers: the buffer's whole texels (vkgmm's own are padded to them)
  if (const std::optional<OwnBuffer> own = ctx.buffers.find(view.buffer)) {
    v = own->texel_views[f];
    bytes = own_buffer_capacity(*own);
  }
  if (!v || view.offset % esize != 0) return {};
  const uint64_t first = view.offset / esize;
  const uint64_t texels = std::min<uint64_t>(bytes / kTexelBytes[f], ctx.dev.info.max_texel_buffer_elements);
  // Element indices are 32-bit in the shaders.
  if (first + count > UINT32_MAX || (first + count + 3) / 4 > texels) return {};
  return {v, static_cast<uint32_t>(first)};
}
}  // namespace

void query_texel_support(VkPhysicalDevice physical, const VkPhysicalDeviceLimits& limits, DeviceInfo& info) {
  bool ok[2];
  for (int i = 0; i < 2; ++i) {
    VkFormatProperties fp{};
    vkGetPhysicalDeviceFormatProperties(physical, kTexelFormats[i], &fp);
    ok[i] = (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  }
  info.texel_loads_32bit = ok[0];
  info.texel_loads_16bit = ok[1];
  info.max_texel_buffer_elements = limits.maxTexelBufferElements;
}

void create_texel_views(const Device& dev, VkBuffer buffer, VkDeviceSize bytes, VkBufferView (&views)[2]) {
  for (uint32_t i = 0; i < 2; ++i) {
    views[i] = VK_NULL_HANDLE;
    const VkDeviceSize texels = std::min<VkDeviceSize>(bytes / kTexelBytes[i], dev.info.max_texel_buffer_elements);
    if (!format_used(dev.info, i) || texels == 0) continue;
    VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    ci.buffer = buffer;
    ci.format = kTexelFormats[i];
    ci.offset = 0;
    ci.range = texels * kTexelBytes[i];
    // Into a local first: on failure the handle is undefined. Views made before a failure are destroyed
    // here: nothing else knows of them yet.
    VkBufferView view = VK_NULL_HANDLE;
    const VkResult r = vkCreateBufferView(dev.device, &ci, nullptr, &view);
    if (r != VK_SUCCESS) {
      for (uint32_t j = 0; j < i; ++j)
        if (views[j]) vkDestroyBufferView(dev.device, views[j], nullptr);
      views[0] = views[1] = VK_NULL_HANDLE;
      check_vk(r, "create_buffer: vkCreateBufferView");
    }
    views[i] = view;
  }
}

bool texel_loads_usable(const DeviceInfo& info, bool allowed, DType a, DType b) {
  // Block formats are read as 32-bit words (shaders/quant.glsl), through the 32-bit texel view.
  if (is_quantized(a)) a = DType::f32;
  if (is_quantized(b)) b = DType::f32;
  return allowed && format_used(info, texel_format_index(a)) && format_used(info, texel_format_index(b));
}

uint64_t texel_reach_bytes(const DeviceInfo& info, DType t) {
  if (is_quantized(t)) t = DType::f32;  // words
  const uint32_t f = texel_format_index(t);
  return std::min<uint64_t>(info.max_texel_buffer_elements * kTexelBytes[f], uint64_t(UINT32_MAX) * dtype_size(t));
}

void bind_texel_inputs(Context::Impl& ctx, const BufferView& lhs, DType lhs_t, uint64_t lhs_count,
                       const BufferView& rhs, DType rhs_t, uint64_t rhs_count, VkBufferView (&texels)[2],
                       uint32_t& lhs_off, uint32_t& rhs_off) {
  texels[0] = texels[1] = VK_NULL_HANDLE;
  const TexelOperand l = texel_operand(ctx, lhs, lhs_t, lhs_count);
  const TexelOperand r = texel_operand(ctx, rhs, rhs_t, rhs_count);
  if (!l.view || !r.view) return;
  texels[0] = l.view;
  texels[1] = r.view;
  lhs_off = l.element_offset;
  rhs_off = r.element_offset;
}

}  // namespace vkgmm
