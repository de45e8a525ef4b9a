// The element types' numbers and the 16-bit conversions: what a module that declares its own buffers
// needs of dtype.glsl (which adds the loads and stores of the ops' bindings).
const uint DT_F32 = VKGMM_DT_F32;
const uint DT_F16 = VKGMM_DT_F16;
const uint DT_BF16 = VKGMM_DT_BF16;

float decode16(uint h, uint type) {
  return type == DT_F16 ? unpackHalf2x16(h).x : uintBitsToFloat(h << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN.
uint encode16(float v, uint type) {
  if (type == DT_F16) return packHalf2x16(vec2(v, 0.0)) & 0xffffu;
  uint b = floatBitsToUint(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (b >> 16) | 0x40u;
  return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

