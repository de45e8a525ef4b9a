// Element types (shaders/interface.h: the numbers of enum class DType in include/vkgmm/types.hpp) and their loads/stores.
// The type of each operand is a specialization constant, so every branch below folds away.
#include "dtype16.glsl"

// float NAME(uint element_index) reading operand OPND (lhs, rhs or ex: its words through OPND_word, see
// bindings.glsl) holding elements of type TYPE; in the VKGMM_STORAGE16 build, 16-bit elements come
// from the 16-bit alias OPND_buf16.
#ifdef VKGMM_STORAGE16
#define VKGMM_DEFINE_LOAD(NAME, OPND, TYPE)                      \
  float NAME(uint i) {                                           \
    if (TYPE == DT_F32) return uintBitsToFloat(OPND##_word(i));  \
    return decode16(uint(OPND##_buf16[i]), TYPE);                \
  }
#else
#define VKGMM_DEFINE_LOAD(NAME, OPND, TYPE)                             \
  float NAME(uint i) {                                                  \
    if (TYPE == DT_F32) return uintBitsToFloat(OPND##_word(i));         \
    uint w = OPND##_word(i >> 1);                                       \
    return decode16((i & 1u) != 0u ? (w >> 16) : (w & 0xffffu), TYPE); \
  }
#endif

vec4 decode16x4(uvec2 w, uint type) {
  if (type == DT_F16) return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
  return uintBitsToFloat(uvec4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u));
}

// The inputs (OPND lhs or rhs): float NAME(uint element_index) and vec4 NAME4(uint element_index), the
// latter for elements i .. i+3 with i a multiple of 4, from the vector views OPND_v4 / OPND_v2 or, in the
// VKGMM_TEXEL build, from the texel view OPND_tex.
#ifdef VKGMM_TEXEL
vec4 decode_texel(uvec4 t, uint type) {
  if (type == DT_F32) return uintBitsToFloat(t);
  return decode16x4(uvec2(t.x | (t.y << 16), t.z | (t.w << 16)), type);
}
#define VKGMM_DEFINE_INPUT_LOADS(NAME, NAME4, OPND, TYPE)                       \
  vec4 NAME4(uint i) { return decode_texel(texelFetch(OPND##_tex, int(i >> 2)), TYPE); } \
  float NAME(uint i) {                                                          \
    uint x = texelFetch(OPND##_tex, int(i >> 2))[i & 3u];                       \
    return TYPE == DT_F32 ? uintBitsToFloat(x) : decode16(x, TYPE);             \
  }
#else
#define VKGMM_DEFINE_INPUT_LOADS(NAME, NAME4, OPND, TYPE)      \
  VKGMM_DEFINE_LOAD(NAME, OPND, TYPE)                          \
  vec4 NAME4(uint i) {                                         \
    if (TYPE == DT_F32) return uintBitsToFloat(OPND##_v4[i >> 2]); \
    return decode16x4(OPND##_v2[i >> 2], TYPE);                \
  }
#endif

// vec4 NAME(uint i, bvec4 ok): elements i .. i+3 through the loads LOAD / LOAD4 (see above), those with
// ok[q] false as zero (never read). With ALIGNED (a constant) the four are all in range or all out, with
// i a multiple of 4, and are read as one LOAD4.
#define VKGMM_DEFINE_MASKED_LOAD4(NAME, LOAD, LOAD4, ALIGNED)                  \
  vec4 NAME(uint i, bvec4 ok) {                                                \
    if (ALIGNED) return ok.x ? LOAD4(i) : vec4(0.0);                           \
    vec4 v;                                                                    \
    [[unroll]] for (uint q = 0; q < 4; ++q) v[q] = ok[q] ? LOAD(i + q) : 0.0; \
    return v;                                                                  \
  }
// The shared schedules' staged chunks (gmm.comp, tgmm.comp): 4 elements as loaded, in a uvec4 carried
// from their load to their store in shared memory. With PACKED (16-bit elements read 4 at a time, i a
// multiple of 4) they stay two to a word (.xy) and staged_values decodes them at the store: half the
// registers, and the loads land where the loop carries them (decoding them first had ACO shuffle the
// decoded values into place, ~40 moves per step). Else they are the bits of MASKED's 4 floats.
// uvec2 NAME(uint i): 16-bit elements i .. i+3 of OPND as they are stored, two to a word.
#ifdef VKGMM_TEXEL
#define VKGMM_DEFINE_PACKED16_LOAD4(NAME, OPND)             \
  uvec2 NAME(uint i) {                                       \
    uvec4 t = texelFetch(OPND##_tex, int(i >> 2));           \
    return uvec2(t.x | (t.y << 16), t.z | (t.w << 16));      \
  }
#else
#define VKGMM_DEFINE_PACKED16_LOAD4(NAME, OPND) \
  uvec2 NAME(uint i) { return OPND##_v2[i >> 2]; }
#endif
// uvec4 NAME(uint i, bvec4 ok): the staged chunk of elements i .. i+3 (those with ok[q] false zero).
#define VKGMM_DEFINE_STAGED_LOAD4(NAME, MASKED, PACKED_LOAD, PACKED)                                      \
  uvec4 NAME(uint i, bvec4 ok) {                                                                          \
    return PACKED ? (ok.x ? uvec4(PACKED_LOAD(i), 0u, 0u) : uvec4(0u)) : floatBitsToUint(MASKED(i, ok)); \
  }
vec4 staged_values(uvec4 w, bool packed, uint type) { return packed ? decode16x4(w.xy, type) : uintBitsToFloat(w); }

// Which of first .. first+3 are below end.
bvec4 run_in(uint first, uint end) { return lessThan(uvec4(first) + uvec4(0, 1, 2, 3), uvec4(end)); }

// Store v as out element i. Without 16-bit storage, 16-bit elements share a word with a neighbour that
// another workgroup may be writing at the same moment: our half alone changes, in one atomicXor with the
// bits that turn its current value (read atomically: only this invocation writes that half) into ours.
// The XOR's operand depends on v, so it is never performed before the loads v came from: existing_out may
// be the very range of out (in place), where v was read from this word, and a separate clear of the half
// (atomicAnd, then atomicOr) could land before that read on a GPU (a weakly ordered or non-coherent
// read-only load) and the element read back as zero.
void store_out(uint i, float v, uint type) {
  if (type == DT_F32) {
    VKGMM_OUT_APPLY(VKGMM_OUT_STORE, i, floatBitsToUint(v));
    return;
  }
#ifdef VKGMM_STORAGE16
  out_buf16[i] = uint16_t(encode16(v, type));
#else
  uint shift = (i & 1u) * 16u, word = 0u;
  VKGMM_OUT_FETCH(atomicOr, i >> 1, 0u, word);
  VKGMM_OUT_APPLY(atomicXor, i >> 1, (((word >> shift) ^ encode16(v, type)) & 0xffffu) << shift);
#endif
}

// Store v as out elements i .. i+3, i a multiple of 4: one vector store (whole words, so 16-bit pairs
// need no atomics: the four elements are this invocation's alone). A split out (parts of 2^PART_SHIFT
// words) stores them one by one.
void store4_out(uint i, vec4 v, uint type) {
#ifdef VKGMM_SPLIT
  [[unroll]] for (uint q = 0u; q < 4u; ++q) store_out(i + q, v[q], type);
#else
  if (type == DT_F32) out_v4[i >> 2] = floatBitsToUint(v);
  else out_v2[i >> 2] = uvec2(encode16(v.x, type) | (encode16(v.y, type) << 16), encode16(v.z, type) | (encode16(v.w, type) << 16));
#endif
}
