// What vkgmm's own programs (the bench, the Python module) reach past the public API, in one place, so
// that they include none of host/'s headers. Internal (host/internal_include/, not installed, not
// exported): the functions are in the library's objects, which those programs link.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vkgmm/context.hpp"

namespace vkgmm::internals {

// A message of the library's, which names the C++ API's fields and calls, in another API's names: each
// swap replaces every occurrence of its C++ phrase, in the table's order (so longer phrases go first).
// The C API's table and the Python module's use it.
struct NameSwap {
  const char* cpp;
  const char* own;
};
std::string renamed(std::string message, const NameSwap* swaps, size_t count);
template <size_t N>
std::string renamed(std::string message, const NameSwap (&swaps)[N]) {
  return renamed(std::move(message), swaps, N);
}

// Validation messages reported while Contexts were destroyed (they cannot be thrown then); returns and
// clears them. The tests, Python's included, fail on any.
std::vector<std::string> take_teardown_messages();

// The memory type vkgmm gives its own mapped buffers among `type_bits` (host-visible and coherent,
// device-local where there is such a type; large ones may be staged in device-local memory instead, as
// create_buffer says); UINT32_MAX when none is host-visible. Lets a program's own buffers differ
// from vkgmm's only in being borrowed.
uint32_t buffer_memory_type(const Context& ctx, uint32_t type_bits);
// The memory type a Buffer of ctx's own lives in (create_buffer's choice: mapped, or device-local and
// staged); UINT32_MAX for a borrowed one.
uint32_t memory_type_of(const Context& ctx, const Buffer& buffer);
// The property flags of memory type `type` of ctx's device.
VkMemoryPropertyFlags memory_type_flags(const Context& ctx, uint32_t type);

// A compute pipeline of a program's own SPIR-V module on vkgmm's plain layout (the bindings of
// shaders/interface.h, push descriptors), from the Context's pipeline cache: it lives as long as ctx.
VkPipeline pipeline(const Context& ctx, const uint32_t* code, size_t words, const std::vector<uint32_t>& constants);
// The plain layout's storage bindings (shaders/interface.h's VKGMM_NUM_BINDINGS).
inline constexpr uint32_t kPlainBindings = 6;
// Binds `pipeline` and pushes `count` descriptors in binding order (kPlainBindings of them) and the push
// constants, as vkgmm's own dispatches do; for a texel build also the texel views of bindings 0 and 1.
void bind_and_push(const Context& ctx, VkCommandBuffer cb, VkPipeline pipeline, const VkDescriptorBufferInfo* infos,
                   uint32_t count, const void* push, uint32_t push_bytes, const VkBufferView* texels = nullptr);

// ----- the device-ceiling probes (tools/probe.cpp): vkgmm's own modules, run as its dispatches run -----

// The loop iterations a CPU driver (lavapipe) runs of all an invocation's loops together before it
// silently ends them (host/tiling.hpp): the probes keep their work per invocation within it.
inline constexpr uint64_t kCpuLoopIterations = 65535;

// shaders/fma_ceiling.comp: `chains` independent chains of `iterations` FMAs per invocation, `invocations`
// a workgroup, each invocation's sum written to a word of binding 0 (per x workgroup column).
VkPipeline fma_ceiling_pipeline(const Context& ctx, uint32_t invocations, uint32_t iterations, uint32_t chains);
struct FmaCeilingPush {
  float seed;
};
// shaders/read_ceiling.comp: `invocations` a workgroup stream vec4s of binding 0 (its texel view with
// `texel`, else the storage binding), reduced with subgroup arithmetic where the device has it in compute
// shaders, else in shared memory; each workgroup writes one word at out_off + its index of binding 1.
VkPipeline read_ceiling_pipeline(const Context& ctx, bool texel, uint32_t invocations);
struct ReadCeilingPush {
  uint32_t first;    // the texel build: the first vec4 (the storage build reads from its binding's start)
  uint32_t count;    // vec4s to read
  uint32_t out_off;  // the first out word
};
// The texel view vkgmm made for a buffer of its own (on CPU devices), else VK_NULL_HANDLE.
VkBufferView texel_view(const Context& ctx, const Buffer& buffer);
// The physical device, for the properties vkgmm does not keep (the memory heaps).
VkPhysicalDevice physical_device(const Context& ctx);
// The largest single allocation the device allows (maxMemoryAllocationSize); 0 where not reported.
uint64_t max_allocation(const Context& ctx);
// Throws the validation layer's messages reported so far as Error(validation).
void throw_validation_messages(const Context& ctx);

}  // namespace vkgmm::internals
