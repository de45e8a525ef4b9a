// The shared schedules' stage (gmm.comp, tgmm.comp): one step of each operand in shared memory, As
// (SHARED_A values) and Bs (SHARED_B), once per buffer (STAGES). An operand's values are lines (lhs rows,
// rhs product columns, tgmm's k rows) by the step's rows (the reduction). The staging code
// (stage_kmajor.glsl and each op's own) puts 4 values at a time, 4 step rows of one line or 4 adjacent
// lines (the first a multiple of 4) of one step row, at a place (stage_place: an element index) it
// computes once per tile.
//  - The FMA builds: f32, step-major ([step row][line]), as vec4s, so that an invocation's 4 adjacent
//    lines are one 16-byte read.
//  - The matrix builds (VKGMM_MATRIX): f16, the cooperative matrices' inputs, line-major: each line's step
//    contiguous (stage_layout.h), the layout matrix units read A's rows and B's columns from without
//    transposing; buffer b from b * SHARED_A (SHARED_B) on. They keep As4 and Bs4 at one vec4 for the other
//    schedules' code, dead there.
//
// The includer defines (constant expressions) STAGE_DEPTH, the step's rows, and STAGE_SPLIT_B: with the
// matrix units, Bs holds a block format's weights. A dequantized weight needs more bits than f16's 11
// (q8_0: an f16 scale times a 7-bit quant): it is staged as two f16 values, its rounding and the rest times
// 2^11 (Bs16's second half, from B_LO; unscaled, the rest of a weight below 0.125 would be an f16
// subnormal, which devices may flush), and multiplied twice (matrix_tile.glsl), so that every product is
// the f32 product of the decoded weight's bits.
//
// The staging code's calls, in both builds:
//   stage_place(line, k, lines): the place of value (line, step row k) of an operand of `lines` lines;
//   stage_step_stride(lines): the places between a line's step rows;
//   stage_put_along(to_b, place, lines, v): v at step rows k .. k + 3 of the line, from `place` (k's);
//   stage_put_across(to_b, place, v): v at lines line .. line + 3 of the step row, from `place` (line's);
// `to_b` (a constant where it is called: a shared array cannot be passed to a function) picks Bs, else As.
#define VKGMM_STAGE_FN
#include "stage_layout.h"
// The stage's buffers (interface.h). With 2, the loop (stage_steps, below) runs a step from
// one buffer while the next step's chunks, loaded meanwhile, go into the other one, then waits at one
// barrier: the other buffer's last reader finished before the barrier before. stage_buffer: the buffer
// the staging code writes (stage_put_*), 0 with one buffer.
layout(constant_id = VKGMM_ID_STAGES) const uint STAGES = 1;
uint stage_buffer = 0u;
#ifdef VKGMM_MATRIX
const uint B_LO = SHARED_B / 2u;
const float B_LO_SCALE = 2048.0;
shared float16_t As16[STAGES * SHARED_A];
shared float16_t Bs16[STAGES * SHARED_B];
shared vec4 As4[1];
shared vec4 Bs4[1];

uint stage_place(uint line, uint k, uint lines) { return vkgmm_stage_place(line, k, STAGE_DEPTH); }
uint stage_step_stride(uint lines) { return 1u; }

// h at place i of As16 (Bs16 with to_b) in the buffer being written.
void stage_set(const bool to_b, uint i, float16_t h) {
  i += stage_buffer * (to_b ? SHARED_B : SHARED_A);
  if (!to_b) As16[i] = h;
  else Bs16[i] = h;
}

// v at place i, converted to f16; a block format's split into its two parts.
void stage_put(const bool to_b, uint i, float v) {
  if (!to_b || !(STAGE_SPLIT_B)) {
    stage_set(to_b, i, float16_t(v));
  } else {
    // v rounded to f16's 11 bits (to nearest even) in f32, by its bits: compilers fold
    // v - float(float16_t(v)) to 0 (lavapipe's does, `precise` or not). Below f16's normal range
    // (|v| < 2^-14) the rounding keeps more bits than the f16 store does, an error below 2^-24 per weight.
    const uint b = floatBitsToUint(v);
    const float hi = uintBitsToFloat((b + 0xfffu + ((b >> 13) & 1u)) & ~0x1fffu);
    stage_set(true, i, float16_t(hi));
    stage_set(true, B_LO + i, float16_t((v - hi) * B_LO_SCALE));
  }
}

void stage_put_along(const bool to_b, uint place, uint lines, vec4 v) {
  [[unroll]] for (uint q = 0; q < 4; ++q) stage_put(to_b, place + q, v[q]);
}
void stage_put_across(const bool to_b, uint place, vec4 v) {
  [[unroll]] for (uint q = 0; q < 4; ++q) stage_put(to_b, place + q * vkgmm_stage_stride(STAGE_DEPTH), v[q]);
}

// A staged chunk (dtype.glsl) as the values the stage holds: in these builds f16, a 16-bit f16 chunk's
// bits as they were loaded. Through f32 (staged_values) ACO kept both conversions, f16 -> f32 -> f16 (they
// differ for a signalling NaN): 64 of the 289 instructions of a 128 x 128 f16 block's step on navi31.
// The overloads below store them as they are: never a block format's weights, which the vec4 ones above
// split from their f32 values (gmm_shared.glsl's b_values keeps those f32).
#define STAGE_VALUES f16vec4
f16vec4 stage_values(uvec4 w, bool packed, uint type) {
  if (packed && type == DT_F16) return f16vec4(unpackFloat2x16(w.x), unpackFloat2x16(w.y));
  return f16vec4(staged_values(w, packed, type));
}
void stage_put_along(const bool to_b, uint place, uint lines, f16vec4 h) {
  [[unroll]] for (uint q = 0; q < 4; ++q) stage_set(to_b, place + q, h[q]);
}
void stage_put_across(const bool to_b, uint place, f16vec4 h) {
  [[unroll]] for (uint q = 0; q < 4; ++q) stage_set(to_b, place + q * vkgmm_stage_stride(STAGE_DEPTH), h[q]);
}
const uint STAGE_A4 = 1u, STAGE_B4 = 1u;
#else
// Each buffer's vec4s; buffer b from b * STAGE_A4 (STAGE_B4) on.
const uint STAGE_A4 = (SHARED_A + 3) / 4, STAGE_B4 = (SHARED_B + 3) / 4;
shared vec4 As4[STAGES * STAGE_A4];
shared vec4 Bs4[STAGES * STAGE_B4];

uint stage_place(uint line, uint k, uint lines) { return k * lines + line; }
uint stage_step_stride(uint lines) { return lines; }

// A staged chunk as the values the stage holds: f32.
#define STAGE_VALUES vec4
vec4 stage_values(uvec4 w, bool packed, uint type) { return staged_values(w, packed, type); }

// Component place & 3 (line & 3) of 4 vec4s a step row apart: lines is a multiple of 4.
void stage_put_along(const bool to_b, uint place, uint lines, vec4 v) {
  const uint c = place & 3u;
  const uint at = (place >> 2) + stage_buffer * (to_b ? STAGE_B4 : STAGE_A4);
  [[unroll]] for (uint q = 0; q < 4; ++q) {
    if (!to_b) As4[at + q * (lines / 4u)][c] = v[q];
    else Bs4[at + q * (lines / 4u)][c] = v[q];
  }
}
void stage_put_across(const bool to_b, uint place, vec4 v) {
  if (!to_b) As4[(place >> 2) + stage_buffer * STAGE_A4] = v;
  else Bs4[(place >> 2) + stage_buffer * STAGE_B4] = v;
}
#endif

// ----- the staged loop, the same for every op (gmm.comp's over K, tgmm.comp's over a group's rows) -----
// The includer defines these after including this file:
//   stage_load_next(at): the chunks of the step at `at` (never the first, ragged, step) into registers;
//   stage_store(): the chunks in registers into buffer stage_buffer;
//   fma_step(a_at, b_at): the FMA builds' products of one step, the invocation's operands from As4[a_at]
//   and Bs4[b_at] on (the matrix builds' matrix_step is matrix_tile.glsl's).
void stage_load_next(int at);
void stage_store();
#ifdef VKGMM_MATRIX
void matrix_step(const uint buf);
#else
void fma_step(uint a_at, uint b_at);
#endif

// The step's products from buffer `buf` (in the FMA builds a constant where it is called).
void stage_compute(const uint buf, uint tx, uint ty) {
#ifdef VKGMM_MATRIX
  matrix_step(buf);
#else
  fma_step(buf * STAGE_A4 + ty, buf * STAGE_B4 + tx);
#endif
}

// The loop's buffers. An expression, not STAGES itself, which glslang would emit as the constant under
// this name.
const uint STAGE_BUFFERS = STAGES == 2u ? 2u : 1u;

// The step at `at` from buffer `buf` (a constant in the FMA builds): with one buffer, the step's chunks
// stored and, past a barrier, the next step's loaded while this one computes; with two, the next step's
// loaded while this one computes and stored into the other buffer. Then the step's barrier.
void stage_step(int at, int end, int stride, const uint buf, uint tx, uint ty) {
  if (STAGE_BUFFERS == 1u) {
    stage_store();
    barrier();
  }
  if (at + stride < end) stage_load_next(at + stride);
  stage_compute(buf, tx, ty);
  if (STAGE_BUFFERS == 2u) {
    stage_buffer = 1u - buf;
    stage_store();
  }
  barrier();
}

// The steps from `at` up to `end`, `stride` apart (has_steps: at least one), the first one's chunks already
// in registers. With two buffers the first step's go into buffer 0 first, and the last step stores its
// chunks once more, into the buffer no step reads again. The FMA builds' loop is unrolled by two steps, so
// that each step's buffer is a constant and every read a constant offset from the invocation's base, which
// compilers keep in the load. The matrix builds' alternates the buffer at run time, one add per matrix
// load: unrolled, ACO (navi31) took 240 VGPRs for a 128 x 128 block, where one buffer takes 168, and
// spilled the block formats', and ANV (DG2) spilled every matrix build. Uniform control flow: the arguments
// are the workgroup's.
void stage_steps(int at, int end, int stride, bool has_steps, uint tx, uint ty) {
  if (STAGE_BUFFERS == 2u && has_steps) {
    stage_buffer = 0u;
    stage_store();
    barrier();
  }
#ifdef VKGMM_MATRIX
  // With one buffer, buf ^ 0: a constant 0 once the driver has specialized the module.
  for (uint buf = 0u; at < end; at += stride, buf ^= STAGE_BUFFERS - 1u) stage_step(at, end, stride, buf, tx, ty);
#else
  for (; at < end; at += int(STAGE_BUFFERS) * stride) {
    stage_step(at, end, stride, 0u, tx, ty);
    if (STAGE_BUFFERS == 2u) {
      if (at + stride >= end) break;
      stage_step(at + stride, end, stride, 1u, tx, ty);
    }
  }
#endif
}
