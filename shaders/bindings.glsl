// The descriptor layout of every vkgmm pipeline, at the bindings of shaders/interface.h.
#include "interface.h"

// Operands are bound as uint words whatever their element type: 16-bit elements are unpacked from
// 32-bit words, so no 16-bit storage feature is needed.
layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer LhsBuf { uint lhs_buf[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_RHS) readonly buffer RhsBuf { uint rhs_buf[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) buffer OutBuf { uint out_buf[]; };
// existing_out may be the very range bound as out (in-place accumulation): neither is `restrict`.
layout(std430, set = 0, binding = VKGMM_BINDING_EXISTING) readonly buffer ExBuf { uint ex_buf[]; };
// Vector views of the inputs (descriptor aliasing), for the direct schedule's 4-element loads: four f32
// elements as a uvec4, or four 16-bit elements as a uvec2. Used only where the host checked alignment.
layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer LhsV4 { uvec4 lhs_v4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer LhsV2 { uvec2 lhs_v2[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_RHS) readonly buffer RhsV4 { uvec4 rhs_v4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_RHS) readonly buffer RhsV2 { uvec2 rhs_v2[]; };
// out's vector views (descriptor aliasing): four adjacent f32 elements as a uvec4, four 16-bit ones as a
// uvec2 (dtype.glsl's store4_out, where the element index is a multiple of 4). A CPU driver stores a
// lane's vector in one pass over the lanes, where four scalar stores take four (lavapipe).
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) buffer OutV4 { uvec4 out_v4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) buffer OutV2 { uvec2 out_v2[]; };
// group_offsets[G+1], then the visit lists (gmm only), as int32.
layout(std430, set = 0, binding = VKGMM_BINDING_META) readonly buffer MetaBuf { int meta[]; };

#ifdef VKGMM_TEXEL
// Uniform texel buffer views of the inputs (host/texel_views.hpp): 4 elements per texel, as
// R32G32B32A32_UINT for f32 and R16G16B16A16_UINT for 16-bit types, each view from the start of its
// buffer. lhs and rhs are read only through these in this build (element offsets count from the buffer's
// start): drivers such as lavapipe gather texels several times faster than they load storage buffers.
layout(set = 0, binding = VKGMM_BINDING_LHS_TEXEL) uniform usamplerBuffer lhs_tex;
layout(set = 0, binding = VKGMM_BINDING_RHS_TEXEL) uniform usamplerBuffer rhs_tex;
#endif

#ifdef VKGMM_SPLIT
// Operands larger than one binding may address (maxStorageBufferRange) are bound as up to 4 parts of
// 2^PART_SHIFT words each: part 0 at the binding above, parts 1-3 at bindings VKGMM_NUM_BINDINGS + 3 * operand + part - 1
// (the split layout of host/pipeline_cache.cpp). A word is read from its part by branching, not by indexing an
// array of descriptors, so no non-uniform descriptor indexing is needed.
layout(constant_id = VKGMM_ID_PART_SHIFT) const uint PART_SHIFT = 25;
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 0) readonly buffer LhsP1 { uint lhs_p1[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 1) readonly buffer LhsP2 { uint lhs_p2[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 2) readonly buffer LhsP3 { uint lhs_p3[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 3) readonly buffer RhsP1 { uint rhs_p1[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 4) readonly buffer RhsP2 { uint rhs_p2[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 5) readonly buffer RhsP3 { uint rhs_p3[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 6) buffer OutP1 { uint out_p1[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 7) buffer OutP2 { uint out_p2[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 8) buffer OutP3 { uint out_p3[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 9) readonly buffer ExP1 { uint ex_p1[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 10) readonly buffer ExP2 { uint ex_p2[]; };
layout(std430, set = 0, binding = VKGMM_NUM_BINDINGS + 11) readonly buffer ExP3 { uint ex_p3[]; };

#define VKGMM_DEFINE_WORD(NAME)                                  \
  uint NAME##_word(uint i) {                                     \
    uint part = i >> PART_SHIFT, j = i & ((1u << PART_SHIFT) - 1u); \
    if (part == 0u) return NAME##_buf[j];                        \
    if (part == 1u) return NAME##_p1[j];                         \
    if (part == 2u) return NAME##_p2[j];                         \
    return NAME##_p3[j];                                         \
  }
VKGMM_DEFINE_WORD(lhs)
VKGMM_DEFINE_WORD(rhs)
VKGMM_DEFINE_WORD(ex)

// Apply OP(word, value) to out word i in its part (OP: a plain store or an atomic).
#define VKGMM_OUT_STORE(x, v) x = (v)
#define VKGMM_OUT_APPLY(OP, i, v)                                \
  {                                                              \
    uint part_ = (i) >> PART_SHIFT, j_ = (i) & ((1u << PART_SHIFT) - 1u); \
    if (part_ == 0u) OP(out_buf[j_], v);                         \
    else if (part_ == 1u) OP(out_p1[j_], v);                     \
    else if (part_ == 2u) OP(out_p2[j_], v);                     \
    else OP(out_p3[j_], v);                                      \
  }
// The same for an atomic OP whose result (the word before it) goes to `result`.
#define VKGMM_OUT_FETCH(OP, i, v, result)                        \
  {                                                              \
    uint part_ = (i) >> PART_SHIFT, j_ = (i) & ((1u << PART_SHIFT) - 1u); \
    if (part_ == 0u) result = OP(out_buf[j_], v);                \
    else if (part_ == 1u) result = OP(out_p1[j_], v);            \
    else if (part_ == 2u) result = OP(out_p2[j_], v);            \
    else result = OP(out_p3[j_], v);                             \
  }
#else
uint lhs_word(uint i) { return lhs_buf[i]; }
uint rhs_word(uint i) { return rhs_buf[i]; }
uint ex_word(uint i) { return ex_buf[i]; }
#define VKGMM_OUT_STORE(x, v) x = (v)
#define VKGMM_OUT_APPLY(OP, i, v) OP(out_buf[i], v)
#define VKGMM_OUT_FETCH(OP, i, v, result) result = OP(out_buf[i], v)
#endif

#ifdef VKGMM_STORAGE16
// The 16-bit view of the same bindings (descriptor aliasing): 16-bit elements are loaded and stored
// one at a time, without unpacking or read-modify-write atomics. Needs storageBuffer16BitAccess.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(std430, set = 0, binding = VKGMM_BINDING_LHS) readonly buffer LhsBuf16 { uint16_t lhs_buf16[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_RHS) readonly buffer RhsBuf16 { uint16_t rhs_buf16[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_OUT) buffer OutBuf16 { uint16_t out_buf16[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_EXISTING) readonly buffer ExBuf16 { uint16_t ex_buf16[]; };
#endif
