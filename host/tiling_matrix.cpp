// The matrix schedule's block, subgroups, step and stage (make_matrix_shape, tiling.hpp).
#include <algorithm>
#include <numeric>
#include <string>

#include "device_class.hpp"
#include "interface.hpp"
#include "tiling.hpp"

namespace vkgmm {

namespace {

// The f16 values of a matrix build's stage of `lines` lines by `step` (shaders/stage_layout.h), where they
// fit the shader's 32-bit arithmetic; else more than any device's shared memory holds.
uint64_t stage_values(int64_t lines, int64_t step) {
  if (lines * (step + VKGMM_MATRIX_STAGE_PAD) >= (int64_t(1) << 31)) return uint64_t(1) << 31;
  return abi::vkgmm_stage_values(static_cast<uint32_t>(lines), static_cast<uint32_t>(step));
}

}  // namespace

KernelShape make_matrix_shape(int64_t rows, int64_t step, int64_t cols, int64_t rows_extent, int64_t step_extent,
                              int64_t cols_extent, const DeviceInfo& info, const char* op, uint32_t halves,
                              bool rhs_blocks, uint32_t stage_buffers) {
  const uint32_t cm_m = info.matrix_m, cm_n = info.matrix_n, cm_k = info.matrix_k, lanes = info.matrix_subgroup_size;
  if (!cm_m || !cm_n || !cm_k || !lanes)
    throw Error(Status::internal, std::string(op) + ": the matrix schedule was chosen without matrix units");
  auto round_up = [](int64_t x, int64_t to) { return (std::max<int64_t>(x, 1) + to - 1) / to * to; };
  KernelShape s;
  s.use_shared = s.matrix = true;
  s.cm_m = cm_m;
  s.cm_n = cm_n;
  s.cm_k = cm_k;
  rows = round_up(std::min(rows, pow2_at_least(std::max<int64_t>(rows_extent, 1))), cm_m);
  cols = round_up(std::min(cols, pow2_at_least(std::max<int64_t>(cols_extent, 1))), cm_n);
  if (rows > 65536 || cols > 65536 || step > 65536)
    throw Error(Status::invalid_argument, std::string(op) + ": tiling: tile sizes above 65536 cannot run");
  const int64_t unit = std::lcm<int64_t>(4, cm_k);  // the step: whole matrices and chunks of 4
  const int64_t asked_step = round_up(std::min(step, pow2_at_least(std::max<int64_t>(step_extent, 1))), unit);
  const DeviceClass& row = device_class(info);
  const uint32_t most = std::max(1u, std::min(row.matrix_subgroups, info.max_workgroup_invocations / lanes));
  // Block-format weights accumulate their two f16 parts apart and stage a chunk for each: twice the
  // accumulators and twice the staged rhs.
  const uint32_t f16_parts = rhs_blocks ? 2 : 1;
  // The shared memory of the block [rows, cols] over the subgroups sg_m x sg_n, at a step of st: `buffers`
  // stages, the accumulators' way out and the dead schedules' few words (64 bytes).
  auto shared_bytes = [&](int64_t st, uint32_t buffers) {
    return uint64_t(2) * buffers * (stage_values(rows, st) + stage_values(cols * halves, st) * f16_parts) +
           uint64_t(4) * s.sg_m * s.sg_n * halves * cm_m * cm_n + 64;
  };
  // The block shrinks, its longer side halved in whole matrices, until each subgroup holds at most the
  // class's accumulator matrices and one buffer's stage fits shared memory.
  for (;;) {
    // The split of the subgroups between rows and columns with the squarest parts; fewer subgroups where
    // none divides the block into whole matrices.
    for (uint32_t subgroups = most;; subgroups /= 2) {
      int64_t best = -1;
      for (uint32_t sg_m = 1; sg_m <= subgroups; sg_m *= 2) {
        const uint32_t sg_n = subgroups / sg_m;
        if (rows % (int64_t(sg_m) * cm_m) != 0 || cols % (int64_t(sg_n) * cm_n) != 0) continue;
        const int64_t part_rows = rows / sg_m, part_cols = cols / sg_n * halves;
        const int64_t skew = std::max(part_rows, part_cols) * 1024 / std::min(part_rows, part_cols);
        if (best < 0 || skew < best) best = skew, s.sg_m = sg_m, s.sg_n = sg_n;
      }
      if (best >= 0 || subgroups == 1) break;
    }
    const uint32_t invocations = s.sg_m * s.sg_n * lanes;
    auto in_flight = [&](int64_t st) {
      return ((uint64_t(rows) + uint64_t(cols) * halves * f16_parts) * st / 4 + invocations - 1) / invocations;
    };
    step = asked_step;
    while (step > unit && (shared_bytes(step, 1) > info.max_shared_memory || in_flight(step) > row.chunks_in_flight))
      step = std::max(unit, step / 2 / unit * unit);
    const uint64_t fragments = uint64_t(rows / (s.sg_m * cm_m)) * (cols / (s.sg_n * cm_n)) * halves * f16_parts;
    if (fragments <= row.matrix_fragments && shared_bytes(step, 1) <= info.max_shared_memory) break;
    if (rows <= cm_m && cols <= cm_n)
      throw Error(Status::unsupported, std::string(op) + ": tiling: one " + std::to_string(cm_m) + " x " +
                                           std::to_string(cm_n) + " matrix per subgroup cannot be staged in " +
                                           std::to_string(info.max_shared_memory) + " bytes of shared memory");
    if (rows / cm_m >= cols * halves / cm_n && rows > cm_m) rows = round_up(rows / 2, cm_m);
    else if (cols > cm_n) cols = round_up(cols / 2, cm_n);
    else rows = round_up(rows / 2, cm_m);
  }
  s.rows = static_cast<uint32_t>(rows);
  s.cols = static_cast<uint32_t>(cols);
  // The invocations as the fill visits and the staging see them (TX x TY, groups of 4 rows and columns).
  const uint32_t invocations = s.sg_m * s.sg_n * lanes;
  s.tx = 1;
  while (s.tx * 2 <= invocations && int64_t(s.tx) * 2 * 4 <= cols) s.tx *= 2;
  s.ty = invocations / s.tx;
  s.rm = static_cast<uint32_t>(round_up((rows + s.ty - 1) / s.ty, 4));
  s.rn = static_cast<uint32_t>(round_up((cols + s.tx - 1) / s.tx, 4));
  s.step = static_cast<uint32_t>(step);
  // Each operand's stage line-major, each line's step contiguous (shaders/stage_layout.h).
  s.shared_a = static_cast<uint32_t>(stage_values(rows, step));
  s.shared_b = static_cast<uint32_t>(stage_values(cols * halves, step) * f16_parts);
  // Two buffers where the options ask for them (for timing on a device) and they fit beside the
  // accumulators' way out at the block and step one buffer has: each step's chunks then go into the other
  // buffer after its products, and the step waits at one barrier, not two. No class takes them: the buffer
  // alternates at run time (stage.glsl's stage_steps), and its offset in every stage address cost more
  // than the barrier it saves in each compiler's loop (instructions per step, one buffer -> two: NAK
  // GA102's 64 x 128 f16 block 101 -> 187, ACO navi31's 128 x 128 216 -> 266, ANV DG2's 32 x 64
  // 551 -> 592), besides the shared memory that two take (navi31: 9 -> 6 subgroups per SIMD).
  if (stage_buffers > 1 && shared_bytes(step, stage_buffers) <= info.max_shared_memory) s.stages = stage_buffers;
  return s;
}

}  // namespace vkgmm
