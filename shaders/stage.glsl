// The shared schedules' stage (gmm.comp, tgmm.comp): one step of each operand in shared memory, As
// (SHARED_A values) and Bs (SHARED_B), in the layouts each op's staging gives (stage_kmajor.glsl and its
// own). The FMA builds stage f32 as vec4s, so that an invocation's 4 adjacent lines are one 16-byte read;
// the matrix builds (VKGMM_MATRIX) stage f16, the cooperative matrices' inputs, and keep As4 and Bs4 at
// one vec4 for the other schedules' code, dead there.
//
// The includer defines STAGE_SPLIT_B (a constant expression): with the matrix units, Bs holds a block
// format's weights. A dequantized weight needs more bits than f16's 11 (q8_0: an f16 scale times a 7-bit
// quant): it is staged as two f16 values, its rounding and the rest times 2^11 (Bs16's second half, from
// B_LO; unscaled, the rest of a weight below 0.125 would be an f16 subnormal, which devices may flush),
// and multiplied twice (matrix_tile.glsl), so that every product is the f32 product of the decoded
// weight's bits.
#ifdef VKGMM_MATRIX
const uint B_LO = SHARED_B / 2u;
const float B_LO_SCALE = 2048.0;
shared float16_t As16[SHARED_A];
shared float16_t Bs16[SHARED_B];
shared vec4 As4[1];
shared vec4 Bs4[1];
void stage_put_b(uint i, float v) {
  if (!(STAGE_SPLIT_B)) {
    Bs16[i] = float16_t(v);
    return;
  }
  // v rounded to f16's 11 bits (to nearest even) in f32, by its bits: compilers fold v - float(float16_t(v))
  // to 0 (lavapipe's does, `precise` or not). Below f16's normal range (|v| < 2^-14) the rounding keeps
  // more bits than the f16 store does, an error below 2^-24 per weight.
  const uint b = floatBitsToUint(v);
  const float hi = uintBitsToFloat((b + 0xfffu + ((b >> 13) & 1u)) & ~0x1fffu);
  Bs16[i] = float16_t(hi);
  Bs16[B_LO + i] = float16_t((v - hi) * B_LO_SCALE);
}
#else
shared vec4 As4[(SHARED_A + 3) / 4];
shared vec4 Bs4[(SHARED_B + 3) / 4];
#endif

// Value v into component c of vec4 `at` of the lhs stage, or the rhs one with `to_b` (a constant where it
// is called: a shared array cannot be passed to a function).
void stage_put(const bool to_b, uint at, uint c, float v) {
#ifdef VKGMM_MATRIX
  if (!to_b) As16[at * 4u + c] = float16_t(v);
  else stage_put_b(at * 4u + c, v);
#else
  if (!to_b) As4[at][c] = v;
  else Bs4[at][c] = v;
#endif
}

// The 4 values v into vec4 `at` of a stage.
void stage_put4(const bool to_b, uint at, vec4 v) {
#ifdef VKGMM_MATRIX
  [[unroll]] for (uint c = 0; c < 4; ++c) stage_put(to_b, at, c, v[c]);
#else
  if (!to_b) As4[at] = v;
  else Bs4[at] = v;
#endif
}
