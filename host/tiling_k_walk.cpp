// The direct schedule's walk along K as gmm's sliced GPU decode sees it (tiling.hpp: KWalkStep), and the
// steps in flight it takes (make_kernel_shape's choice).
#include "interface.hpp"
#include "tiling.hpp"
#include "vkgmm/vkgmm.h"

namespace vkgmm {

KWalkStep k_walk_step(DType rhs, bool rhs_nk, bool vec4) {
  KWalkStep w;
  // Scalar loads walk K a value at a time (gmm_direct.glsl's reduce_direct), one in flight.
  if (!vec4) w.most_steps = 1;
  if (!is_quantized(rhs)) {
    w.column_bytes = 4.0 * double(dtype_size(rhs));
    return w;
  }
  if (!rhs_nk) {
    // Blocks along n: each quad decoded on its own (dequant4), one in flight.
    w.column_bytes = 4.0 * double(block_bytes(rhs)) / double(block_elements(rhs));
    w.most_steps = 1;
    return w;
  }
  w.blocks = true;
  // A step holds its run's quant words, q6_K's, q5_K's and q3_K's 8 words of high bits, and its QStep
  // (two scales, two mins, the shifts: about 4 registers once folded), whatever its parts: a wide step
  // (q2_K's four parts, VKGMM_WIDE_PARTS of a GPU's build) shares its words and is taken only alone in
  // flight. A K slice takes at least two of the table's steps.
#define VKGMM_WALK_STEP_(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) \
  if (rhs == DType(VKGMM_##NAME)) {                                                                       \
    const uint32_t parts = VKGMM_WIDE_PARTS(scales, false);                                               \
    w.values = step * parts, w.least_slice_values = 2 * step;                                             \
    w.column_registers = run_words + 8 * high + 4;                                                        \
    if (parts > 1) w.most_steps = 1;                                                                      \
  }
  VKGMM_BLOCK_FORMATS(VKGMM_WALK_STEP_)
#undef VKGMM_WALK_STEP_
  w.column_bytes = double(w.values) * double(block_bytes(rhs)) / double(block_elements(rhs));
  return w;
}

// An element type's step also holds its rm rows' quad of lhs; a block walk loads lhs a quad at a time
// within its steps (4 x rm registers, whatever the steps in flight).
uint32_t gpu_decode_steps_in_flight(const KernelShape& s, const KWalkStep& w, int64_t k, uint32_t halves,
                                    uint32_t most_floats) {
  const double bytes = double(s.rn) * halves * w.column_bytes;
  const uint64_t held = uint64_t(s.rn) * halves * w.column_registers + (w.blocks ? 0 : 4 * uint64_t(s.rm));
  const uint64_t lhs_quad = w.blocks ? 4 * uint64_t(s.rm) : 0;
  uint32_t steps = 1;
  while (steps < w.most_steps && bytes * steps < kDecodeBytesInFlight && held * steps * 2 + lhs_quad <= most_floats &&
         k % (int64_t(w.values) * steps * 2) == 0)
    steps *= 2;
  return steps;
}

}  // namespace vkgmm
