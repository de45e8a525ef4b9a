// The per-token ops' operands, one table per op (internal): name, whether the op writes it, its extent
// and its binding, in the order of the op's push block, which starts with one <name>_off per row. The
// core's checks and bindings (token_op.hpp), the sizes the plans report and the C API's conversions all
// come from these rows; the public structs (vkgmm/top_k.hpp) must have exactly these fields.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "interface.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm {

// tokens * experts (logits and their gradient) or tokens * top_k (one per slot).
enum class TokenExtent { logits, slots };

struct TokenOperandRow {
  const char* name;
  bool written;
  TokenExtent extent;
  uint32_t binding;
  const char* values;
};

// X(name, written, extent, binding, values): values names the elements in messages (all 32-bit words).
#define VKGMM_TOP_K_OPERANDS(X)                                  \
  X(logits, false, logits, VKGMM_BINDING_TOPK_LOGITS, f32)       \
  X(ids, true, slots, VKGMM_BINDING_TOPK_IDS, int32)             \
  X(weights, true, slots, VKGMM_BINDING_TOPK_WEIGHTS, f32)

// The inputs are only read and may share words; d_logits may share none with them.
#define VKGMM_TOP_K_BACKWARD_OPERANDS(X)                                   \
  X(logits, false, logits, VKGMM_BINDING_TOPK_GRAD_LOGITS, f32)            \
  X(ids, false, slots, VKGMM_BINDING_TOPK_GRAD_IDS, int32)                 \
  X(weights, false, slots, VKGMM_BINDING_TOPK_GRAD_WEIGHTS, f32)           \
  X(d_weights, false, slots, VKGMM_BINDING_TOPK_GRAD_D_WEIGHTS, f32)       \
  X(d_logits, true, logits, VKGMM_BINDING_TOPK_GRAD_D_LOGITS, f32)

template <class Operands>
struct TokenOperandTable;

#define VKGMM_TOKEN_ROW(name, written, extent, binding, values) {#name, written, TokenExtent::extent, binding, #values},
#define VKGMM_TOKEN_VIEW(name, written, extent, binding, values) ops.name,
#define VKGMM_TOKEN_OFFSET(name, written, extent, binding, values) push.name##_off = *offsets++;
#define VKGMM_TOKEN_SIZE(name, written, extent, binding, values) s.name = *bytes++;
#define VKGMM_TOKEN_COPY(name, written, extent, binding, values) to.name = convert(c.name);
#define VKGMM_TOKEN_PUSH_AT(name, written, extent, binding, values) at = at && offsetof(Push, name##_off) == 4 * row++;
#define VKGMM_TOKEN_FIELD(name, written, extent, binding, values) +1

#define VKGMM_TOKEN_OPERAND_TABLE(OPERANDS, SIZES, PUSH, LIST)                                               \
  template <>                                                                                               \
  struct TokenOperandTable<OPERANDS> {                                                                      \
    using Sizes = SIZES;                                                                                    \
    using Push = abi::PUSH;                                                                                 \
    static constexpr size_t count = 0 LIST(VKGMM_TOKEN_FIELD);                                              \
    static constexpr TokenOperandRow rows[count] = {LIST(VKGMM_TOKEN_ROW)};                                 \
    static_assert(sizeof(OPERANDS) == count * sizeof(BufferView), "a field of " #OPERANDS " the table lacks"); \
    static_assert(sizeof(SIZES) == count * sizeof(VkDeviceSize), "a field of " #SIZES " the table lacks");   \
    static std::array<BufferView, count> views(const OPERANDS& ops) { return {LIST(VKGMM_TOKEN_VIEW)}; }    \
    static void set_offsets(Push& push, const uint32_t* offsets) { LIST(VKGMM_TOKEN_OFFSET) }               \
    static Sizes sizes(const VkDeviceSize* bytes) {                                                         \
      Sizes s;                                                                                              \
      LIST(VKGMM_TOKEN_SIZE)                                                                                \
      return s;                                                                                             \
    }                                                                                                       \
    static constexpr bool push_starts_with_offsets() {                                                      \
      bool at = true;                                                                                       \
      size_t row = 0;                                                                                       \
      LIST(VKGMM_TOKEN_PUSH_AT)                                                                             \
      return at;                                                                                            \
    }                                                                                                       \
    /* Every row's field of `c` (the C API's struct) through `convert`. */                                  \
    template <class From, class Convert>                                                                    \
    static OPERANDS from_c(const From& c, Convert convert) {                                                \
      static_assert(sizeof(From) < (count + 1) * sizeof(BufferView), "a field the table lacks");            \
      OPERANDS to;                                                                                          \
      LIST(VKGMM_TOKEN_COPY)                                                                                \
      return to;                                                                                            \
    }                                                                                                       \
  };                                                                                                        \
  static_assert(TokenOperandTable<OPERANDS>::push_starts_with_offsets(),                                    \
                #PUSH " does not start with the rows' offsets, in order");

VKGMM_TOKEN_OPERAND_TABLE(TopKOperands, TopKSizes, TopKPush, VKGMM_TOP_K_OPERANDS)
VKGMM_TOKEN_OPERAND_TABLE(TopKBackwardOperands, TopKBackwardSizes, TopKGradPush, VKGMM_TOP_K_BACKWARD_OPERANDS)

#undef VKGMM_TOKEN_OPERAND_TABLE
#undef VKGMM_TOKEN_FIELD
#undef VKGMM_TOKEN_PUSH_AT
#undef VKGMM_TOKEN_COPY
#undef VKGMM_TOKEN_SIZE
#undef VKGMM_TOKEN_OFFSET
#undef VKGMM_TOKEN_VIEW
#undef VKGMM_TOKEN_ROW

}  // namespace vkgmm
