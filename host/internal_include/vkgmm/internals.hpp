// What vkgmm's own programs (the bench, the Python module) reach past the public API, in one place, so
// that they include none of host/'s headers. Internal (host/internal_include/, not installed, not
// exported): the functions are in the library's objects, which those programs link.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vkgmm/context.hpp"

namespace vkgmm::internals {

// Validation messages reported while Contexts were destroyed (they cannot be thrown then); returns and
// clears them. The tests, Python's included, fail on any.
std::vector<std::string> take_teardown_messages();

// The memory type vkgmm gives its own buffers among `type_bits` (host-visible and coherent, device-local
// where there is such a type); UINT32_MAX when none is host-visible. Lets a program's own buffers differ
// from vkgmm's only in being borrowed.
uint32_t buffer_memory_type(const Context& ctx, uint32_t type_bits);
// The property flags of memory type `type` of ctx's device.
VkMemoryPropertyFlags memory_type_flags(const Context& ctx, uint32_t type);

// A compute pipeline of a program's own SPIR-V module on vkgmm's plain layout (the bindings of
// shaders/interface.h, push descriptors), from the Context's pipeline cache: it lives as long as ctx.
VkPipeline pipeline(const Context& ctx, const uint32_t* code, size_t words, const std::vector<uint32_t>& constants);
// Binds `pipeline` and pushes `count` descriptors in binding order (VKGMM_NUM_BINDINGS of them) and the
// push constants, as vkgmm's own dispatches do.
void bind_and_push(const Context& ctx, VkCommandBuffer cb, VkPipeline pipeline, const VkDescriptorBufferInfo* infos,
                   uint32_t count, const void* push, uint32_t push_bytes);

}  // namespace vkgmm::internals
