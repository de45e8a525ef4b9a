// Binding operand views to the shared descriptor layout (internal).
#pragma once

#include "context_impl.hpp"

namespace vkgmm {

// Bytes a view of `count` elements of type t must cover: whole 32-bit words (see OperandSizes).
VkDeviceSize operand_bytes(DType t, uint64_t count);

// A view as bound: the descriptor (its offset aligned down to the device's requirement) and the
// element offset of the view's first element within it.
struct BoundOperand {
  VkDescriptorBufferInfo info{};
  uint32_t element_offset = 0;
};

// Checks the view (non-null, element-aligned offset, large enough, within the binding range limit) and
// throws Error(invalid_argument) naming `op` and `name` otherwise.
BoundOperand bind_operand(const DeviceInfo& info, const char* op, const char* name, const BufferView& view,
                          DType type, uint64_t count);

// Bind `pipeline` and push the five descriptors (unused bindings repeat a valid one).
void bind_and_push(Context::Impl& ctx, VkCommandBuffer cb, VkPipeline pipeline,
                   const VkDescriptorBufferInfo (&infos)[kNumBindings], const void* push, uint32_t push_bytes);

// Every operand view of a problem with `count` elements must be free of overlap with the output
// (except existing_out, which may be the output itself).
bool views_overlap(const BufferView& a, const BufferView& b);

}  // namespace vkgmm
