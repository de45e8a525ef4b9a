// The descriptor layout of every vkgmm pipeline (mirrors enum Binding in host/context_impl.hpp).
// Operands are bound as uint words whatever their element type: 16-bit elements are unpacked from
// 32-bit words, so no 16-bit storage feature is needed.
layout(std430, set = 0, binding = 0) readonly buffer LhsBuf { uint lhs_buf[]; };
layout(std430, set = 0, binding = 1) readonly buffer RhsBuf { uint rhs_buf[]; };
layout(std430, set = 0, binding = 2) buffer OutBuf { uint out_buf[]; };
// existing_out may be the very range bound as out (in-place accumulation): neither is `restrict`.
layout(std430, set = 0, binding = 3) readonly buffer ExBuf { uint ex_buf[]; };
// Vector views of the inputs (descriptor aliasing), for the direct schedule's 4-element loads: four f32
// elements as a uvec4, or four 16-bit elements as a uvec2. Used only where the host checked alignment.
layout(std430, set = 0, binding = 0) readonly buffer LhsV4 { uvec4 lhs_v4[]; };
layout(std430, set = 0, binding = 0) readonly buffer LhsV2 { uvec2 lhs_v2[]; };
layout(std430, set = 0, binding = 1) readonly buffer RhsV4 { uvec4 rhs_v4[]; };
layout(std430, set = 0, binding = 1) readonly buffer RhsV2 { uvec2 rhs_v2[]; };
// group_offsets[G+1], then the visit lists (gmm only), as int32.
layout(std430, set = 0, binding = 4) readonly buffer MetaBuf { int meta[]; };

#ifdef VKGMM_STORAGE16
// The 16-bit view of the same bindings (descriptor aliasing): 16-bit elements are loaded and stored
// one at a time, without unpacking or read-modify-write atomics. Needs storageBuffer16BitAccess.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
layout(std430, set = 0, binding = 0) readonly buffer LhsBuf16 { uint16_t lhs_buf16[]; };
layout(std430, set = 0, binding = 1) readonly buffer RhsBuf16 { uint16_t rhs_buf16[]; };
layout(std430, set = 0, binding = 2) buffer OutBuf16 { uint16_t out_buf16[]; };
layout(std430, set = 0, binding = 3) readonly buffer ExBuf16 { uint16_t ex_buf16[]; };
#endif
