// The shared schedules' staging of a K-major tile (gmm.comp's lhs and rhs [n, k], tgmm.comp's lhs
// [k, m]): a tile whose contiguous axis is the reduction, K, with `lines` rows or columns (a multiple of
// 4) per K step, read in chunks of 4 K values of one line, one load each, and put into the stage along
// their line. Which chunk is whose (stage_layout.h's kmajor functions):
//  - the FMA builds: chunk e is line e % lines, so that neighbouring lanes store into neighbouring lines,
//    consecutive banks of their step-major stage (stage.glsl);
//  - the matrix builds (KMAJOR_ALONG_STEP): chunk e is line e / (STAGE_DEPTH / 4), the lanes of a
//    subgroup along each line's step: whole 32-byte sectors of memory, and adjacent places in the stage.
//
// Invocation lid takes chunks lid + s * NT (NT, the includer's: the workgroup's invocations). Their
// sources (the chunk's first element at K offset 0 of the tile) and places in the stage are computed
// once per tile; a step adds its K offset to the source, the same for the whole workgroup.
#ifdef VKGMM_MATRIX
const bool KMAJOR_ALONG_STEP = true;
#else
const bool KMAJOR_ALONG_STEP = false;
#endif

uint kmajor_line(uint e, uint lines) { return vkgmm_kmajor_line(KMAJOR_ALONG_STEP, e, lines, STAGE_DEPTH); }
uint kmajor_k(uint e, uint lines) { return vkgmm_kmajor_k(KMAJOR_ALONG_STEP, e, lines, STAGE_DEPTH); }
// The chunk's first value's place in the stage (stage.glsl).
uint kmajor_place(uint e, uint lines) { return stage_place(kmajor_line(e, lines), kmajor_k(e, lines), lines); }

// Where the chunks run across the lines and the invocations divide them (NT % lines == 0), invocation
// lid's chunk s lies on the line of its chunk 0, kmajor_k_past K values and kmajor_place_past places of the
// stage after it: one address, constant offsets. (Along the step, its chunks lie on other lines, whose
// sources the includer computes: gathered rows.)
bool kmajor_on_first_line(uint s, uint lines) { return !KMAJOR_ALONG_STEP && s > 0u && NT % lines == 0u; }
uint kmajor_k_past(uint lid, uint s, uint lines) { return kmajor_k(lid + s * NT, lines) - kmajor_k(lid, lines); }
uint kmajor_place_past(uint s, uint lines) { return (s * NT / lines) * 4u * stage_step_stride(lines); }

// Which of a chunk's 4 values a step reads, the first at `at` of a reduction that starts at `begin`: the
// ragged first step (`first`, a constant where it is called) starts before it, and its values there are
// zero, never read; every other step lies in the reduction.
bvec4 kmajor_reads(int at, int begin, const bool first) {
  return first ? greaterThanEqual(ivec4(at) + ivec4(0, 1, 2, 3), ivec4(begin)) : bvec4(true);
}

// The chunk's values v into the lhs stage, or the rhs one with `to_b` (a constant where it is called):
// 4 step rows of its line, from its place.
// (STAGE_VALUES; in the matrix builds also a block format's f32 values.)
void kmajor_store(const bool to_b, uint place, uint lines, vec4 v) { stage_put_along(to_b, place, lines, v); }
#ifdef VKGMM_MATRIX
void kmajor_store(const bool to_b, uint place, uint lines, f16vec4 h) { stage_put_along(to_b, place, lines, h); }
#endif
