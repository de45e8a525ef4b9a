// vkgmm/internals.hpp: the narrow door vkgmm's own programs use into a Context's parts.
#include "vkgmm/internals.hpp"

#include <stdexcept>

#include "context_impl.hpp"
#include "operands.hpp"

namespace vkgmm::internals {

std::vector<std::string> take_teardown_messages() { return vkgmm::take_teardown_messages(); }

uint32_t buffer_memory_type(const Context& ctx, uint32_t type_bits) {
  return ContextInternals::of(ctx).dev.buffer_memory_type(type_bits);
}

VkMemoryPropertyFlags memory_type_flags(const Context& ctx, uint32_t type) {
  const Device& dev = ContextInternals::of(ctx).dev;
  if (type >= dev.memory.memoryTypeCount) throw std::out_of_range("vkgmm::internals: no such memory type");
  return dev.memory.memoryTypes[type].propertyFlags;
}

VkPipeline pipeline(const Context& ctx, const uint32_t* code, size_t words, const std::vector<uint32_t>& constants) {
  return ContextInternals::of(ctx).pipeline(code, words, constants);
}

void bind_and_push(const Context& ctx, VkCommandBuffer cb, VkPipeline pipeline, const VkDescriptorBufferInfo* infos,
                   uint32_t count, const void* push, uint32_t push_bytes) {
  // pipeline() makes plain-layout pipelines only: any other count would not match their layout.
  if (count != kNumBindings) throw std::logic_error("vkgmm::internals::bind_and_push: the plain layout has " +
                                                    std::to_string(kNumBindings) + " bindings");
  vkgmm::bind_and_push(ContextInternals::of(ctx), cb, pipeline, infos, count, push, push_bytes);
}

}  // namespace vkgmm::internals
