// The host's side of shaders/interface.h: binding numbers, specialization constant ids and the
// push-constant structs, from the very lines the shaders compile (internal).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "interface.h"
#include "vkgmm/types.hpp"

namespace vkgmm::abi {

using uint = uint32_t;  // the GLSL type name the field lists use

// The matrix builds' stage layout, the functions the shaders compile (shaders/stage_layout.h).
#define VKGMM_STAGE_FN inline
#include "stage_layout.h"
#undef VKGMM_STAGE_FN

struct OperandOffsets {
  VKGMM_PUSH_OPERAND_OFFSETS(VKGMM_PUSH_FIELD)
};

// A push-constant field by name and byte offset, as the host lays it out (what the interface test
// compares with the offsets glslc gave the shader's block).
struct PushField {
  const char* name;
  uint32_t offset;
};
template <class Push>
struct PushLayout;

// Each op's push block: its struct from the shader's field list, and the list's names and offsets.
#define VKGMM_PUSH_FIELD_ENTRY(type, name) {#name, static_cast<uint32_t>(offsetof(Struct, name))},
#define VKGMM_PUSH_BLOCK(Name, FIELDS)                                      \
  struct Name {                                                             \
    FIELDS(VKGMM_PUSH_FIELD)                                                \
  };                                                                        \
  template <>                                                               \
  struct PushLayout<Name> {                                                 \
    using Struct = Name;                                                    \
    static constexpr PushField fields[] = {FIELDS(VKGMM_PUSH_FIELD_ENTRY)}; \
  };
VKGMM_PUSH_BLOCK(GmmPush, VKGMM_GMM_PUSH)
VKGMM_PUSH_BLOCK(TgmmPush, VKGMM_TGMM_PUSH)
VKGMM_PUSH_BLOCK(CeilingPush, VKGMM_CEILING_PUSH)
VKGMM_PUSH_BLOCK(ReadPush, VKGMM_READ_PUSH)
VKGMM_PUSH_BLOCK(MetadataPush, VKGMM_METADATA_PUSH)
VKGMM_PUSH_BLOCK(CombinePush, VKGMM_COMBINE_PUSH)
VKGMM_PUSH_BLOCK(TopKPush, VKGMM_TOPK_PUSH)
VKGMM_PUSH_BLOCK(TopKGradPush, VKGMM_TOPK_GRAD_PUSH)
VKGMM_PUSH_BLOCK(GradPush, VKGMM_GRAD_PUSH)
#undef VKGMM_PUSH_BLOCK
#undef VKGMM_PUSH_FIELD_ENTRY

// Every op's push block starts with its operands' offsets, where the plan core writes them.
template <class Push>
constexpr bool starts_with_operand_offsets() {
  return offsetof(Push, lhs_off) == offsetof(OperandOffsets, lhs_off) &&
         offsetof(Push, rhs_off) == offsetof(OperandOffsets, rhs_off) &&
         offsetof(Push, out_off) == offsetof(OperandOffsets, out_off) &&
         offsetof(Push, ex_off) == offsetof(OperandOffsets, ex_off) &&
         offsetof(Push, bias_off) == offsetof(OperandOffsets, bias_off);
}
static_assert(starts_with_operand_offsets<GmmPush>() && starts_with_operand_offsets<TgmmPush>() &&
              starts_with_operand_offsets<CombinePush>());
static_assert(sizeof(OperandOffsets) == VKGMM_PUSH_OPERAND_WORDS * 4);

// The pipeline layout's push range; Vulkan guarantees at least 128 bytes.
constexpr uint32_t kPushConstantBytes = 128;
static_assert(sizeof(GmmPush) <= kPushConstantBytes && sizeof(TgmmPush) <= kPushConstantBytes &&
              sizeof(MetadataPush) <= kPushConstantBytes && sizeof(CombinePush) <= kPushConstantBytes &&
              sizeof(TopKPush) <= kPushConstantBytes && sizeof(TopKGradPush) <= kPushConstantBytes &&
              sizeof(GradPush) <= kPushConstantBytes);

// A specialization constant by id and the name the shader gives it, per module family (the interface
// test checks both against every built module).
struct SpecConstant {
  uint32_t id;
  const char* name;
};

}  // namespace vkgmm::abi

namespace vkgmm::abi {

// Each module family's constants: the ids the host sets, with the shader's names for them. Those every
// op's kernel has (kCommonConstants), then each op's: the block's rows, its step and the rows per
// invocation under each shader's own names (gmm's block is [TM, TN] stepped by TK, tgmm's [TK, TN]
// stepped by TM), and the op's switches. Kernel::set refuses any other id.
inline constexpr SpecConstant kCommonConstants[] = {
    {VKGMM_ID_INVOCATIONS, nullptr},  // local_size_x_id: glslc gives it no name
    {VKGMM_ID_BLOCK_COLS, "TN"},
    {VKGMM_ID_TX, "TX"},
    {VKGMM_ID_TY, "TY"},
    {VKGMM_ID_COLS_PER_INV, "RN"},
    {VKGMM_ID_LHS_TYPE, "LHS_TYPE"},
    {VKGMM_ID_RHS_TYPE, "RHS_TYPE"},
    {VKGMM_ID_OUT_TYPE, "OUT_TYPE"},
    {VKGMM_ID_USE_SHARED, "USE_SHARED"},
    {VKGMM_ID_HAS_EXISTING, "HAS_EXISTING"},
    {VKGMM_ID_SHARED_A, "SHARED_A"},
    {VKGMM_ID_SHARED_B, "SHARED_B"},
    {VKGMM_ID_VEC4, "VEC4"},
    {VKGMM_ID_PERSISTENT, "PERSISTENT"},
    {VKGMM_ID_STAGES, "STAGES"},
};
inline constexpr SpecConstant kGmmConstants[] = {
    {VKGMM_ID_BLOCK_ROWS, "TM"},
    {VKGMM_ID_STEP, "TK"},
    {VKGMM_ID_ROWS_PER_INV, "RM"},
    {VKGMM_ID_GMM_TRANSPOSE_RHS, "TRANSPOSE_RHS"},
    {VKGMM_ID_GMM_ROUTED, "ROUTED"},
    {VKGMM_ID_GMM_WEIGHTED, "WEIGHTED"},
    {VKGMM_ID_GMM_BIAS, "BIAS"},
    {VKGMM_ID_GMM_ACTIVATION, "ACTIVATION"},
    {VKGMM_ID_GMM_FUSED_COMBINE, "FUSED_COMBINE"},
    {VKGMM_ID_GMM_VEC4_OUT, "VEC4_OUT"},
    {VKGMM_ID_GMM_K_SLICES, "K_SLICES"},
    {VKGMM_ID_GMM_SAVE_PRE, "SAVE_PRE"},
    {VKGMM_ID_GMM_STEPS_IN_FLIGHT, "STEPS_IN_FLIGHT"},
    {VKGMM_ID_GMM_ROUTE_IN_KERNEL, "ROUTE_IN_KERNEL"},
    {VKGMM_ID_GMM_SIZES_IN_KERNEL, "SIZES_IN_KERNEL"},
};
inline constexpr SpecConstant kTgmmConstants[] = {
    {VKGMM_ID_BLOCK_ROWS, "TK"},
    {VKGMM_ID_STEP, "TM"},
    {VKGMM_ID_ROWS_PER_INV, "RK"},
    {VKGMM_ID_TGMM_LHS_MK, "LHS_MK"},
    {VKGMM_ID_TGMM_OUT_NK, "OUT_NK"},
    {VKGMM_ID_TGMM_VEC4_LHS, "VEC4_LHS"},
    {VKGMM_ID_TGMM_VEC4_OUT, "VEC4_OUT"},
    {VKGMM_ID_TGMM_SPLIT, "SPLIT"},
};
// Declared by the VKGMM_SPLIT builds only.
inline constexpr SpecConstant kSplitConstant = {VKGMM_ID_PART_SHIFT, "PART_SHIFT"};
// The modules whose subgroups share memory (gmm, tgmm, the metadata build, the routed gradient) number them
// through shaders/invocation.glsl; the pipeline cache sets this one where reversal is asked for and the
// workgroup is whole subgroups (PipelineCache::get).
inline constexpr SpecConstant kReverseSubgroupsConstant = {VKGMM_ID_REVERSE_SUBGROUPS, "REVERSE_SUBGROUPS"};
// Declared by the ops' matrix builds (VKGMM_MATRIX) only.
inline constexpr SpecConstant kMatrixConstants[] = {
    {VKGMM_ID_MATRIX_M, "CM_M"},
    {VKGMM_ID_MATRIX_N, "CM_N"},
    {VKGMM_ID_MATRIX_K, "CM_K"},
    {VKGMM_ID_MATRIX_SG_M, "SG_M"},
    {VKGMM_ID_MATRIX_SG_N, "SG_N"},
};
inline constexpr SpecConstant kMetadataConstants[] = {
    {VKGMM_ID_INVOCATIONS, nullptr},
    {VKGMM_ID_META_VISITS, "VISITS"},
    {VKGMM_ID_META_ROUTE, "ROUTE"},
    {VKGMM_ID_META_ROUTE_WEIGHTED, "ROUTE_WEIGHTED"},
    {VKGMM_ID_META_ROUTE_SHARED_COUNTS, "ROUTE_SHARED_COUNTS"},
    {VKGMM_ID_META_ROUTE_GIVEN, "ROUTE_GIVEN"},
    {VKGMM_ID_META_TGMM_SPLIT, "TGMM_SPLIT"},
    {VKGMM_ID_META_HEIGHTS, "HEIGHTS"},
    {VKGMM_ID_META_VISIT_OVERHEAD, "VISIT_OVERHEAD"},
};
inline constexpr SpecConstant kCombineConstants[] = {
    {VKGMM_ID_INVOCATIONS, nullptr},
    {VKGMM_ID_OUT_TYPE, "OUT_TYPE"},
    {VKGMM_ID_HAS_EXISTING, "HAS_EXISTING"},
    {VKGMM_ID_COMBINE_LISTED, "LISTED"},
};
// The workgroup size is fixed in the module (VKGMM_TOPK_INVOCATIONS).
inline constexpr SpecConstant kTopKConstants[] = {
    {VKGMM_ID_TOPK_RENORMALIZE, "RENORMALIZE"},
};
// The workgroup size is fixed in the module (VKGMM_TOPK_INVOCATIONS, as the forward's).
inline constexpr SpecConstant kTopKGradConstants[] = {
    {VKGMM_ID_TOPK_RENORMALIZE, "RENORMALIZE"},
    {VKGMM_ID_TOPK_GRAD_ACCUMULATE, "ACCUMULATE"},
};
inline constexpr SpecConstant kGradConstants[] = {
    {VKGMM_ID_INVOCATIONS, nullptr},
    {VKGMM_ID_OUT_TYPE, "OUT_TYPE"},
    {VKGMM_ID_LHS_TYPE, "LHS_TYPE"},
    {VKGMM_ID_GRAD_COMBINED, "COMBINED"},
    {VKGMM_ID_GRAD_ACCUMULATE, "ACCUMULATE"},
    {VKGMM_ID_GRAD_ACTIVATION, "ACTIVATION"},
    {VKGMM_ID_VEC4, "VEC4"},
};
inline constexpr SpecConstant kCeilingConstants[] = {
    {VKGMM_ID_INVOCATIONS, nullptr},
    {VKGMM_ID_CEILING_ITERS, "ITERS"},
    {VKGMM_ID_CEILING_CHAINS, "CHAINS"},
};
inline constexpr SpecConstant kReadConstants[] = {
    {VKGMM_ID_INVOCATIONS, nullptr},
};

// The highest id a module's own constants take: the pipeline cache appends kReverseSubgroupsConstant
// after a module's constants (one entry per id 0 .. its highest), so every other id stays below it.
template <size_t N>
constexpr uint32_t max_id(const SpecConstant (&list)[N]) {
  uint32_t m = 0;
  for (const SpecConstant& c : list) m = c.id > m ? c.id : m;
  return m;
}
inline constexpr uint32_t kMaxModuleConstantId = std::max({
    max_id(kCommonConstants), max_id(kGmmConstants), max_id(kTgmmConstants), kSplitConstant.id,
    max_id(kMatrixConstants), max_id(kMetadataConstants), max_id(kCombineConstants), max_id(kTopKConstants),
    max_id(kTopKGradConstants), max_id(kGradConstants), max_id(kCeilingConstants), max_id(kReadConstants)});
static_assert(kMaxModuleConstantId < kReverseSubgroupsConstant.id,
              "the subgroup-reversal constant must follow every module's own constants");

}  // namespace vkgmm::abi
