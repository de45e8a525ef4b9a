// Operand views: checked, then bound as push descriptors.
#include "operands.hpp"

#include <algorithm>
#include <string>


namespace vkgmm {

VkDeviceSize operand_bytes(DType t, uint64_t count) { return storage_bytes(t, count); }

// A view past the end of its buffer would bind a descriptor range the buffer does not have: the shader
// would read or write outside it.
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


VkDeviceSize operand_binding_alignment(const DeviceInfo& info) {
  return std::max<VkDeviceSize>(info.min_storage_buffer_offset_alignment, 16);
}

VkDeviceSize split_part_bytes(const DeviceInfo& info) {
  VkDeviceSize p = 1;
  while (p * 2 <= info.max_storage_buffer_range) p *= 2;
  return p;
}

namespace {

// Where a checked view binds: from `base` (aligned), its first element `lead` bytes in, its data (in whole
// words where it may be) ending `end` bytes in.
struct Extent {
  VkDeviceSize base = 0, lead = 0, end = 0, esize = 1;
};

// bind_operand's checks of the view itself (all but the binding limits).
// `values` names the elements in messages (nullptr: the type's name).
Extent check_view(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view, DType type,
                  uint64_t count, bool packed, const char* values = nullptr) {
  const DeviceInfo& info = ctx.dev.info;
  auto fail = [&](const std::string& what) {
    throw Error(Status::invalid_argument, std::string(op) + ": " + name + ": " + what);
  };
  if (view.buffer == VK_NULL_HANDLE) fail("buffer is VK_NULL_HANDLE");
  check_view_in_buffer(ctx, op, name, view);
  // Block formats are addressed in bytes from the descriptor's start, which must be the view's: the shader
  // finds value i's block at (i / B) * S (shaders/quant.glsl), and reads them a word at a time.
  const bool blocks = is_quantized(type);
  const VkDeviceSize esize = blocks ? 1 : dtype_size(type);
  if (view.offset % esize != 0)
    fail("offset " + std::to_string(view.offset) + " is not a multiple of the element size " + std::to_string(esize));
  const VkDeviceSize align = operand_binding_alignment(info);
  if (blocks && view.offset % align != 0)
    fail("offset " + std::to_string(view.offset) + " of " + dtype_name(type) + " blocks is not a multiple of " +
         std::to_string(align) + " (minStorageBufferOffsetAlignment, at least 16)");
  const VkDeviceSize base = view.offset / align * align;
  const VkDeviceSize lead = view.offset - base;
  const VkDeviceSize need = storage_bytes(type, count);
  if (view.size < need)
    fail("view of " + std::to_string(view.size) + " bytes is too small: " + std::to_string(count) + " " +
         (values ? values : dtype_name(type)) + " values need " + std::to_string(need));
  check_block_operand_bytes(op, name, type, need);
  packed = packed || blocks;
  // From the descriptor's start: the end of the last element, and of the word holding it. The word
  // holding the first element starts at or after `base`, inside the buffer.
  const VkDeviceSize data_end = lead + need;
  VkDeviceSize end = whole_words(data_end);
  if (end != data_end) {
    // The last element ends mid-word. Bind the whole word only where the buffer surely has it: binding
    // past a buffer's end is invalid and its accesses undefined. Reading the other half is harmless (it is
    // discarded), and the packed build writes only our half of it (atomicAnd / atomicOr on disjoint bits).
    const VkDeviceSize capacity = own_buffer_capacity(ctx, view.buffer);
    const bool has_word = lead + view.size >= end || (capacity && base + end <= capacity);
    if (!has_word) {
      if (packed)
        fail("its " + std::to_string(count) + " " + dtype_name(type) + " values end mid-way through a 32-bit " +
             "word that the view does not cover, and vkgmm reads " +
             (blocks ? std::string("block formats") : "16-bit data without 16-bit storage (storageBuffer16BitAccess)") +
             " in whole words: in an app's own VkBuffer the view must extend " +
             std::to_string(end - data_end) + " bytes past its last element (the buffer must hold them), " +
             "or use a buffer from Context::create_buffer, which vkgmm pads itself");
      end = data_end;  // the 16-bit-storage build accesses exactly the elements
    }
  }
  if (lead / esize + count > UINT32_MAX)
    throw Error(Status::unsupported, std::string(op) + ": " + name + ": more than 2^32 elements (element " +
                                         "indices are 32-bit)");
  return {base, lead, end, esize};
}

}  // namespace

namespace {
BoundOperand bind_checked(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                          DType type, uint64_t count, VkDeviceSize part_bytes, bool packed, const char* values) {
  const DeviceInfo& info = ctx.dev.info;
  const auto [base, lead, end, esize] = check_view(ctx, op, name, view, type, count, packed, values);
  const VkDeviceSize limit = part_bytes ? part_bytes * kMaxParts : info.max_storage_buffer_range;
  if (end > limit)
    throw Error(Status::unsupported, std::string(op) + ": " + name + ": " + std::to_string(end) +
                                         " bytes exceed what vkgmm can bind on this device (" + std::to_string(limit) +
                                         "; maxStorageBufferRange " + std::to_string(info.max_storage_buffer_range) +
                                         ")");
  BoundOperand b = bound_in_parts(view.buffer, base, end, part_bytes);
  b.element_offset = static_cast<uint32_t>(lead / esize);
  return b;
}
}  // namespace

void check_block_operand_bytes(const char* op, const char* name, DType type, uint64_t bytes) {
  if (is_quantized(type) && bytes > kMaxBlockOperandBytes)
    throw Error(Status::unsupported,
                std::string(op) + ": " + name + ": " + std::to_string(bytes) + " bytes of " + dtype_name(type) +
                    " blocks: vkgmm addresses block-format weights by 32-bit byte offsets, at most " +
                    std::to_string(kMaxBlockOperandBytes) +
                    " bytes in one call; plan the experts in windows (group_offset, num_rhs_groups)");
}

BoundOperand bound_in_parts(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize range, VkDeviceSize part_bytes) {
  BoundOperand b;
  if (!part_bytes || range <= part_bytes) {
    b.info = {buffer, offset, range};
    return b;
  }
  if (range > part_bytes * kMaxParts)
    throw Error(Status::internal, "vkgmm: " + std::to_string(range) + " bytes bound in parts of " +
                                      std::to_string(part_bytes));
  b.info = {buffer, offset, part_bytes};
  for (VkDeviceSize start = part_bytes; start < range; start += part_bytes)
    b.more[b.parts++ - 1] = {buffer, offset + start, std::min(part_bytes, range - start)};
  return b;
}

BoundOperand bind_operand(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                          DType type, uint64_t count, VkDeviceSize part_bytes, bool packed) {
  return bind_checked(ctx, op, name, view, type, count, part_bytes, packed, nullptr);
}

BoundOperand bind_words(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                        uint64_t count, const char* values) {
  return bind_checked(ctx, op, name, view, DType::f32, count, 0, false, values);
}

BoundOperand bind_unread_operand(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                                 DType type, uint64_t count, bool packed, const VkDescriptorBufferInfo& unread) {
  check_view(ctx, op, name, view, type, count, packed);
  BoundOperand b;
  b.info = unread;
  return b;
}

uint32_t layout_descriptors(const BoundOperand (&operands)[4], const VkDescriptorBufferInfo& meta,
                            const VkDescriptorBufferInfo& bias, bool split,
                            VkDescriptorBufferInfo (&out)[kNumSplitBindings]) {
  for (uint32_t o = 0; o < 4; ++o) out[o] = operands[o].info;
  out[kMeta] = meta;
  out[kBias] = bias;
  if (!split) return kNumBindings;
  for (uint32_t o = 0; o < 4; ++o)
    for (uint32_t p = 1; p < kMaxParts; ++p)
      out[kNumBindings + 3 * o + p - 1] = p < operands[o].parts ? operands[o].more[p - 1] : operands[o].info;
  return kNumSplitBindings;
}

void bind_and_push(Context::Impl& ctx, VkCommandBuffer cb, VkPipeline pipeline,
                   const VkDescriptorBufferInfo (&infos)[kNumBindings], const void* push, uint32_t push_bytes,
                   const VkBufferView* texels) {
  bind_and_push(ctx, cb, pipeline, infos, kNumBindings, push, push_bytes, texels);
}

void bind_and_push(Context::Impl& ctx, VkCommandBuffer cb, VkPipeline pipeline, const VkDescriptorBufferInfo* infos,
                   uint32_t count, const void* push, uint32_t push_bytes, const VkBufferView* texels,
                   const VkDescriptorBufferInfo* route) {
  const bool split = count == kNumSplitBindings;
  VkPipelineLayout layout = ctx.pipelines.layout(split);
  VkWriteDescriptorSet writes[kNumSplitBindings + 2 + kNumRouteBindings];
  for (uint32_t b = 0; b < count; ++b) {
    writes[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[b].dstBinding = b;
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  uint32_t n = count;
  if (texels && !split) {
    for (uint32_t t = 0; t < 2; ++t) {
      VkWriteDescriptorSet& w = writes[n++];
      w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstBinding = t == 0 ? kLhsTexel : kRhsTexel;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      w.pTexelBufferView = &texels[t];
    }
  }
  for (uint32_t r = 0; route && r < kNumRouteBindings; ++r) {
    VkWriteDescriptorSet& w = writes[n++];
    w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstBinding = kRouteWeights + r;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &route[r];
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  ctx.dev.push_descriptor_set(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, n, writes);
  vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
}

bool views_overlap(const BufferView& a, const BufferView& b) {
  if (a.buffer != b.buffer) return false;
  return a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

}  // namespace vkgmm
