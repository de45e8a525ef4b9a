// Operand views, checked and bound to the shared descriptor layout (internal): every view a plan binds
// is checked here, in one place (the rules between views are problem_checks' and the operand table's).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

#include "context_impl.hpp"

namespace vkgmm {

// `bytes` rounded up to whole 32-bit words: the unit in which the packed shaders (no 16-bit storage)
// read and write 16-bit elements.
constexpr VkDeviceSize whole_words(VkDeviceSize bytes) { return (bytes + 3) / 4 * 4; }
// What vkgmm allocates for a buffer of `bytes`: whole 16-byte units (a texel of 4 x 32 bits, or two of
// 4 x 16 bits), so that an operand ending mid-word or mid-texel is still read whole (see create_buffer).
constexpr VkDeviceSize whole_texels(VkDeviceSize bytes) { return (bytes + 15) / 16 * 16; }

// The size of the VkBuffer behind a vkgmm Buffer: what create_buffer was asked for, rounded up to whole
// 16-byte texels (Buffer::size() still reports what was asked), or exactly what the app declared of a borrowed
// one. 0 for an app's own buffer vkgmm does not know, whose size Vulkan cannot tell: past a view's end,
// an app's buffer may have no byte at all.
VkDeviceSize own_buffer_capacity(const Context::Impl& ctx, VkBuffer buffer);
// The same of a buffer already found in the registry.
VkDeviceSize own_buffer_capacity(const OwnBuffer& own);

// Throws Error(invalid_argument) naming `op` and the operand when a view runs past the end of its buffer.
// Exact for buffers made by Context::create_buffer; for the app's own buffers the bound is the buffer's
// memory requirement (its size rounded up to the driver's alignment), the tightest Vulkan can tell.
// Null buffers are skipped (other checks name them).
void check_view_in_buffer(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view);
void check_views_in_buffers(const Context::Impl& ctx, const char* op,
                            std::initializer_list<std::pair<const char*, BufferView>> views);

// Bytes a view of `count` elements of type t must cover: exactly its elements (see OperandSizes).
VkDeviceSize operand_bytes(DType t, uint64_t count);

// A view as bound: the descriptor (its offset aligned down to the device's requirement) and the
// element offset of the view's first element within it. An operand bound in parts has `parts` > 1
// descriptors of part_bytes each (the last one shorter); info is part 0.
struct BoundOperand {
  VkDescriptorBufferInfo info{};
  VkDescriptorBufferInfo more[kMaxParts - 1]{};
  uint32_t parts = 1;
  uint32_t element_offset = 0;
};

// Checks the view (non-null, inside its buffer, element-aligned offset, large enough, within what one binding may
// address, or with part_bytes > 0 within kMaxParts parts of part_bytes) and throws Error naming `op` and
// `name` otherwise.
//
// 16-bit elements whose last one ends mid-word: the descriptor covers the whole last word wherever the
// buffer is known to have it (the view reaches it, or the buffer is vkgmm's, allocated in whole words);
// else it ends at the last element, which the 16-bit-storage build reads and writes element by element.
// The packed build (`packed`: the kernel's module has no 16-bit storage, e.g. the split one) can only
// access whole words: there an app's view that ends mid-word, and does not cover the rest of the word,
// is refused (invalid_argument) rather than bound past what the app vouched for.
BoundOperand bind_operand(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                          DType type, uint64_t count, VkDeviceSize part_bytes, bool packed);
// A block-format operand's bytes, which the shaders address by 32-bit byte offsets from the view's start
// (shaders/quant.glsl: value i's block at (i / B) * S, read a few words past its start): at most
// kMaxBlockOperandBytes, else Error(unsupported) naming `op` and `name`. Only q8_0 (34 bytes per 32
// values) can pass it below the 2^32 values every operand is held to.
inline constexpr uint64_t kMaxBlockOperandBytes = (uint64_t(1) << 32) - 64;
void check_block_operand_bytes(const char* op, const char* name, DType type, uint64_t bytes);

// `range` bytes of `buffer` from `offset` as the split build addresses an operand, word i in part
// i >> PART_SHIFT: parts of part_bytes (at most kMaxParts; the caller bounds the range), or one binding
// where part_bytes is 0 or the range fits one part.
BoundOperand bound_in_parts(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize range, VkDeviceSize part_bytes);
// `count` 32-bit words at any 4-byte offset (ids and group sizes, "int32"; the status word, "uint32";
// routing weights, "f32"), one binding, checked as bind_operand checks f32 elements; `values` names them in
// its messages.
BoundOperand bind_words(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                        uint64_t count, const char* values);

// An input the kernel reads only through a texel view (whose reach bind_texel_inputs checked): the same
// checks of the view, no binding limit, and `unread` (any valid descriptor) in its storage binding.
BoundOperand bind_unread_operand(const Context::Impl& ctx, const char* op, const char* name, const BufferView& view,
                                 DType type, uint64_t count, bool packed, const VkDescriptorBufferInfo& unread);

// What an operand's binding offset is aligned down to: minStorageBufferOffsetAlignment, at least 16 (the
// direct schedule's vector views index uvec4s from the descriptor's start). A view may start up to this
// less one byte past its binding, so one binding holds an operand of maxStorageBufferRange less this.
VkDeviceSize operand_binding_alignment(const DeviceInfo& info);

// The largest power of two a binding may address: the part size of the split layout.
VkDeviceSize split_part_bytes(const DeviceInfo& info);

// The descriptors of lhs, rhs, out, existing_out, the metadata and the bias in binding order: kNumBindings
// of them, or with `split` kNumSplitBindings (absent parts repeat part 0, which the shader never reads
// there). Returns the count written to `out`.
uint32_t layout_descriptors(const BoundOperand (&operands)[4], const VkDescriptorBufferInfo& meta,
                            const VkDescriptorBufferInfo& bias, bool split,
                            VkDescriptorBufferInfo (&out)[kNumSplitBindings]);

// Bind `pipeline` and push its descriptors: `count` infos in binding order, for the plain layout
// (kNumBindings) or the split one (kNumSplitBindings); for a texel pipeline also the texel views of lhs
// and rhs (`texels`, plain layout only); for a gmm pipeline also the route bindings (`route`:
// kNumRouteBindings infos, either layout).
void bind_and_push(Context::Impl& ctx, VkCommandBuffer cb, VkPipeline pipeline, const VkDescriptorBufferInfo* infos,
                   uint32_t count, const void* push, uint32_t push_bytes, const VkBufferView* texels = nullptr,
                   const VkDescriptorBufferInfo* route = nullptr);
// The plain layout's kNumBindings descriptors (unused bindings repeat a valid one).
void bind_and_push(Context::Impl& ctx, VkCommandBuffer cb, VkPipeline pipeline,
                   const VkDescriptorBufferInfo (&infos)[kNumBindings], const void* push, uint32_t push_bytes,
                   const VkBufferView* texels = nullptr);

// Whether two views share a byte (a null view shares none).
bool views_overlap(const BufferView& a, const BufferView& b);

// Each row's view given exactly where the op takes it: `refused(i)` says why the op refuses a view of row
// i (null: it takes one), `needed(i)` why it needs one (null: it may go without). Error(invalid_argument)
// "<op>: <name>: a view was given but <why>" or "<op>: <name>: <why> but no view was given". Row: any
// struct with `name`.
template <class Row, class Refused, class Needed>
void check_table_presence(const char* op, const Row* rows, const BufferView* views, size_t count, Refused refused,
                          Needed needed) {
  for (size_t i = 0; i < count; ++i) {
    const char* why = views[i].buffer ? refused(i) : needed(i);
    if (!why) continue;
    throw Error(Status::invalid_argument, std::string(op) + ": " + rows[i].name + ": " +
                                              (views[i].buffer ? std::string("a view was given but ") + why
                                                               : std::string(why) + " but no view was given"));
  }
}

// An operand table's overlap rule (operand_table.hpp, top_k_operands.hpp, backward_operands.hpp): each
// written operand's view against every other row's, each pair once (of two written ones the earlier row
// checks it and is named first), except the one pair of rows `shared` lets share words:
// Error(invalid_argument) "<op>: <written> overlaps <other>". Row: any struct with `name` and `written`.
inline constexpr size_t kNoRow = ~size_t(0);
template <class Row>
void check_table_overlaps(const char* op, const Row* rows, const BufferView* views, size_t count,
                          std::pair<size_t, size_t> shared = {kNoRow, kNoRow}) {
  for (size_t w = 0; w < count; ++w) {
    if (!rows[w].written) continue;
    for (size_t o = 0; o < count; ++o) {
      if (o == w || (rows[o].written && o < w)) continue;
      if ((w == shared.first && o == shared.second) || (w == shared.second && o == shared.first)) continue;
      if (views_overlap(views[w], views[o]))
        throw Error(Status::invalid_argument, std::string(op) + ": " + rows[w].name + " overlaps " + rows[o].name);
    }
  }
}

}  // namespace vkgmm
