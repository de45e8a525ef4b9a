// The matrix builds' stage layout (stage.glsl, stage_kmajor.glsl, matrix_tile.glsl), in the subset of C that
// GLSL shares: the host sizes the stage from these lines (host/tiling.cpp) and the tests replay the
// addresses each lane stores and the matrix units load (tests/test_stage_banks.cpp). The includer defines
// `uint` and VKGMM_STAGE_FN (C++: inline; GLSL: nothing).
//
// An operand's stage holds `lines` lines (A's rows, B's columns) by `depth` step rows (the reduction), as
// f16, each line's step contiguous at a stride of depth + VKGMM_MATRIX_STAGE_PAD (interface.h): the layout
// every matrix unit loads without transposing (A row-major, B column-major; NAK lowers only these loads to
// LDSM, ACO and ANV read a lane's values as 128-bit loads). The pad keeps each line 16-byte aligned (steps
// are multiples of 8: matrices of K >= 8) and puts 8 consecutive lines of 16 bytes each, one phase of a
// matrix load, on 8 different groups of 4 banks.

// The places between consecutive lines. Also a macro, for the shaders' constant expressions: a compiler
// lowers a matrix load to its fast form (NAK: LDSM) only where the stride is a constant when it sees the
// load, before it inlines calls.
#define VKGMM_STAGE_STRIDE(depth) ((depth) + uint(VKGMM_MATRIX_STAGE_PAD))
VKGMM_STAGE_FN uint vkgmm_stage_stride(uint depth) { return VKGMM_STAGE_STRIDE(depth); }

// The place of value (line, step row k), and the f16 values of the stage.
VKGMM_STAGE_FN uint vkgmm_stage_place(uint line, uint k, uint depth) { return line * vkgmm_stage_stride(depth) + k; }
VKGMM_STAGE_FN uint vkgmm_stage_values(uint lines, uint depth) { return lines * vkgmm_stage_stride(depth); }

// A source contiguous along the step is read in chunks of 4 step values of one line; chunk e's line and
// first step row. The matrix builds put consecutive chunks along the step (`along_step`): a line's step is
// contiguous in memory, so the lanes of a subgroup read whole 32-byte sectors and store into adjacent
// places; the FMA builds put them across the lines, their stage's order (stage.glsl).
VKGMM_STAGE_FN uint vkgmm_kmajor_line(bool along_step, uint e, uint lines, uint depth) {
  return along_step ? e / (depth / 4u) : e % lines;
}
VKGMM_STAGE_FN uint vkgmm_kmajor_k(bool along_step, uint e, uint lines, uint depth) {
  return along_step ? (e % (depth / 4u)) * 4u : (e / lines) * 4u;
}

// A source contiguous along the lines is read in chunks of 4 adjacent lines of one step row: invocation
// lid's chunk s (of nt invocations) begins at a line and a step row:
//  - one by one (`quads` false): chunk lid + s * nt, consecutive chunks along the step row;
//  - in quads (the matrix builds, where each of the nt invocations takes a multiple of 4 chunks:
//    VKGMM_LINES_IN_QUADS): an invocation's chunks 4t .. 4t + 3 are the 4 step rows of one 4 x 4 block,
//    quad lid + t * nt, quads along the step, so that the invocation stores the block transposed, 4 step
//    values of a line at a time (adjacent places, 8 bytes aligned), the warp's lanes on neighbouring runs
//    of the same lines. A 32-lane load instruction reads, per step row, the 8 bytes (f16) of each of its
//    32 / (depth / 4) groups of 4 lines: a whole 32-byte sector at steps of 32, half of one at 64.
#define VKGMM_LINES_IN_QUADS(chunks, nt) ((chunks) % (4u * (nt)) == 0u)
VKGMM_STAGE_FN uint vkgmm_lines_line(bool quads, uint lid, uint s, uint nt, uint lines, uint depth) {
  return quads ? ((lid + (s / 4u) * nt) / (depth / 4u)) * 4u : ((lid + s * nt) % (lines / 4u)) * 4u;
}
VKGMM_STAGE_FN uint vkgmm_lines_k(bool quads, uint lid, uint s, uint nt, uint lines, uint depth) {
  return quads ? ((lid + (s / 4u) * nt) % (depth / 4u)) * 4u + s % 4u : (lid + s * nt) / (lines / 4u);
}
