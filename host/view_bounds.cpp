// A view past the end of its buffer would bind a descriptor range the buffer does not have: the shader
// would read or write outside it. Refused before anything is recorded.
#include "view_bounds.hpp"

#include <string>

namespace vkgmm {

void check_view_in_buffer(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view) {
  if (view.buffer == VK_NULL_HANDLE) return;
  VkDeviceSize size = 0;
  bool exact = false;
  if (const std::optional<OwnBuffer> own = ctx.buffers.find(view.buffer)) {
    size = own->size;
    exact = true;
  }
  if (!exact) {
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx.dev.device, view.buffer, &req);
    size = req.size;
  }
  if (view.offset > size || view.size > size - view.offset)
    throw Error(Status::invalid_argument,
                std::string(op) + ": " + name + ": the view [" + std::to_string(view.offset) + ", " +
                    std::to_string(view.offset) + " + " + std::to_string(view.size) + ") runs past the end of its " +
                    (exact ? "" : "at most ") + std::to_string(size) + "-byte buffer");
}

void check_views_in_buffers(const Context::Impl& ctx, const char* op,
                            std::initializer_list<std::pair<const char*, BufferView>> views) {
  for (const auto& [name, view] : views) check_view_in_buffer(ctx, op, name, view);
}

VkDeviceSize own_buffer_capacity(const Context::Impl& ctx, VkBuffer buffer) {
  const std::optional<OwnBuffer> own = ctx.buffers.find(buffer);
  return own ? own_buffer_capacity(*own) : 0;
}

VkDeviceSize own_buffer_capacity(const OwnBuffer& own) {
  return own.borrowed ? own.size : whole_texels(own.size);  // vkgmm pads only what it allocates
}

}  // namespace vkgmm
