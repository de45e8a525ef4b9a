// vkgmm/internals.hpp: the narrow door vkgmm's own programs use into a Context's parts.
#include "vkgmm/internals.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <stdexcept>

#include "context_impl.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "shader_modules.hpp"
#include "tiling.hpp"

namespace vkgmm::internals {

std::string renamed(std::string message, const NameSwap* swaps, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const std::string cpp = swaps[i].cpp, own = swaps[i].own;
    for (size_t at = message.find(cpp); at != std::string::npos; at = message.find(cpp, at + own.size()))
      message.replace(at, cpp.size(), own);
  }
  return message;
}

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

static_assert(kPlainBindings == vkgmm::kNumBindings);
static_assert(internals::kCpuLoopIterations == vkgmm::kCpuLoopIterations);
static_assert(sizeof(FmaCeilingPush) == sizeof(abi::CeilingPush) && offsetof(FmaCeilingPush, seed) == offsetof(abi::CeilingPush, seed));
static_assert(sizeof(ReadCeilingPush) == sizeof(abi::ReadPush) && offsetof(ReadCeilingPush, first) == offsetof(abi::ReadPush, first) &&
              offsetof(ReadCeilingPush, count) == offsetof(abi::ReadPush, count) &&
              offsetof(ReadCeilingPush, out_off) == offsetof(abi::ReadPush, out_off));

void bind_and_push(const Context& ctx, VkCommandBuffer cb, VkPipeline pipeline, const VkDescriptorBufferInfo* infos,
                   uint32_t count, const void* push, uint32_t push_bytes, const VkBufferView* texels) {
  // pipeline() makes plain-layout pipelines only: any other count would not match their layout.
  if (count != kNumBindings) throw std::logic_error("vkgmm::internals::bind_and_push: the plain layout has " +
                                                    std::to_string(kNumBindings) + " bindings");
  vkgmm::bind_and_push(ContextInternals::of(ctx), cb, pipeline, infos, count, push, push_bytes, texels);
}

VkPipeline fma_ceiling_pipeline(const Context& ctx, uint32_t invocations, uint32_t iterations, uint32_t chains) {
  const ShaderCode code = fma_ceiling_shader();
  const std::vector<uint32_t> constants = spec_constants(
      {{VKGMM_ID_INVOCATIONS, invocations}, {VKGMM_ID_CEILING_ITERS, iterations}, {VKGMM_ID_CEILING_CHAINS, chains}});
  return ContextInternals::of(ctx).pipeline(code.code, code.words, constants);
}

VkPipeline read_ceiling_pipeline(const Context& ctx, bool texel, uint32_t invocations) {
  Context::Impl& im = ContextInternals::of(ctx);
  const bool arithmetic = (im.dev.compute_subgroup_operations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  const ShaderCode code = read_ceiling_shader(texel, arithmetic);
  return im.pipeline(code.code, code.words, spec_constants({{VKGMM_ID_INVOCATIONS, invocations}}));
}

VkBufferView texel_view(const Context& ctx, const Buffer& buffer) {
  const std::optional<OwnBuffer> own = ContextInternals::of(ctx).buffers.find(buffer.handle());
  return own ? own->texel_views[0] : VK_NULL_HANDLE;
}

uint32_t memory_type_of(const Context& ctx, const Buffer& buffer) {
  const std::optional<OwnBuffer> own = ContextInternals::of(ctx).buffers.find(buffer.handle());
  return own ? own->memory_type : UINT32_MAX;
}

VkPhysicalDevice physical_device(const Context& ctx) { return ContextInternals::of(ctx).dev.physical; }

uint64_t max_allocation(const Context& ctx) { return ContextInternals::of(ctx).dev.max_allocation; }

void throw_validation_messages(const Context& ctx) { ContextInternals::of(ctx).log.throw_if_any(); }

}  // namespace vkgmm::internals
