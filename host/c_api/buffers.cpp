// C API: vkgmm-made buffers (mapped or staged, as vkgmm::Buffer), and an app's VkBuffers borrowed.
#include "c_api.hpp"

using vkgmm::c_api::guarded;
using vkgmm::c_api::require;

extern "C" {

vkgmm_status vkgmm_buffer_create(vkgmm_context* ctx, VkDeviceSize bytes, vkgmm_buffer** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(ctx, "ctx");
    *out = new vkgmm_buffer{ctx->ctx.create_buffer(bytes)};
  });
}

vkgmm_status vkgmm_buffer_borrow(vkgmm_context* ctx, VkBuffer buffer, VkDeviceSize bytes, int texel_usage,
                                 vkgmm_buffer** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(ctx, "ctx");
    *out = new vkgmm_buffer{ctx->ctx.borrow_buffer(buffer, bytes, texel_usage != 0)};
  });
}

vkgmm_status vkgmm_buffer_borrow_usage(vkgmm_context* ctx, VkBuffer buffer, VkDeviceSize bytes,
                                       VkBufferUsageFlags usage, vkgmm_buffer** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(ctx, "ctx");
    *out = new vkgmm_buffer{ctx->ctx.borrow_buffer(buffer, bytes, (usage & VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT) != 0,
                                                   (usage & VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT) != 0)};
  });
}

void vkgmm_buffer_destroy(vkgmm_buffer* buffer) { delete buffer; }

vkgmm_status vkgmm_buffer_upload(vkgmm_buffer* buffer, const void* data, size_t bytes, size_t offset) {
  return guarded([&] {
    require(buffer, "buffer");
    if (bytes) require(data, "data");
    buffer->buffer.upload(data, bytes, offset);
  });
}

vkgmm_status vkgmm_buffer_download(const vkgmm_buffer* buffer, void* data, size_t bytes, size_t offset) {
  return guarded([&] {
    require(buffer, "buffer");
    if (bytes) require(data, "data");
    buffer->buffer.download(data, bytes, offset);
  });
}

vkgmm_buffer_view vkgmm_buffer_whole(const vkgmm_buffer* buffer) {
  if (!buffer) return vkgmm_buffer_view{VK_NULL_HANDLE, 0, 0};
  const vkgmm::BufferView v = buffer->buffer.view();
  return vkgmm_buffer_view{v.buffer, v.offset, v.size};
}

}  // extern "C"
