// The shared schedules' staging of a tile contiguous along its lines (gmm.comp's rhs [k, n], tgmm.comp's lhs
// [m, k] and rhs): chunks of 4 adjacent lines of one step row, one load each (stage_layout.h's lines
// functions say which chunk is whose).
//  - The FMA builds: one chunk at a time, stored whole (4 adjacent lines: one vec4 of their step-major
//    stage).
//  - The matrix builds, where each invocation takes a multiple of 4 chunks (LINES_QUADS(chunks)): in quads,
//    the 4 step rows of 4 lines, stored transposed into the line-major stage, 4 step values of a line at a
//    time: adjacent places, where one chunk's 4 values would go to 4 lines (up to 16-way bank conflicts,
//    tests/test_stage_banks.cpp). Elsewhere one by one, stored across the lines.
// The includer defines NT, the workgroup's invocations, and includes stage.glsl first. `quads` is the
// operand's LINES_QUADS (a constant where it is called).
#ifdef VKGMM_MATRIX
#define LINES_QUADS(chunks) VKGMM_LINES_IN_QUADS(chunks, NT)
#else
#define LINES_QUADS(chunks) false
#endif

// Invocation lid's chunk s: its first line and its step row.
uint lines_line(const bool quads, uint lid, uint s, uint lines) {
  return vkgmm_lines_line(quads, lid, s, NT, lines, STAGE_DEPTH);
}
uint lines_k(const bool quads, uint lid, uint s, uint lines) { return vkgmm_lines_k(quads, lid, s, NT, lines, STAGE_DEPTH); }
// In quads, an invocation's chunk s lies on the lines of chunk lines_quad_first(s), s % 4 step rows after.
bool lines_in_quad(const bool quads, uint s) { return quads && s % 4u != 0u; }
// Whether chunks are taken one by one. (A function: glslang emits `!` of a specialization constant inside a
// function before the constant it negates, which spirv-val refuses.)
bool lines_one_by_one(const bool quads) { return !quads; }
uint lines_quad_first(uint s) { return s & ~3u; }

// The quad of chunks v0 .. v3 (step rows k .. k + 3 of 4 lines, the first line's k at `place`), a line at a
// time, for chunks of each type the stage takes (STAGE_VALUES; in the matrix builds also f32).
#define LINES_STORE_QUAD(T)                                                                                  \
  void lines_store_quad(const bool to_b, uint place, T v0, T v1, T v2, T v3) {                               \
    [[unroll]] for (uint j = 0; j < 4; ++j)                                                                  \
      stage_put_along(to_b, place + j * vkgmm_stage_stride(STAGE_DEPTH), 4u, T(v0[j], v1[j], v2[j], v3[j])); \
  }
LINES_STORE_QUAD(vec4)
#ifdef VKGMM_MATRIX
LINES_STORE_QUAD(f16vec4)
#endif

// Chunk s of the includer's `next`, its `count` chunks in flight (an array sized by specialization
// constants, which a function cannot take), converted by `values` (a function of a chunk), into the stage
// at `place`: in quads by the quad's first chunk, else across its lines. (The clamped indices are the
// quad's own: count is a multiple of 4 wherever `quads` holds.)
#define LINES_STORE(quads, to_b, s, count, place, next, values)                                            \
  if (quads) {                                                                                             \
    if ((s) % 4u == 0u)                                                                                    \
      lines_store_quad(to_b, place, values(next[s]), values(next[min((s) + 1u, (count) - 1u)]),            \
                       values(next[min((s) + 2u, (count) - 1u)]), values(next[min((s) + 3u, (count) - 1u)])); \
  } else {                                                                                                 \
    stage_put_across(to_b, place, values(next[s]));                                                       \
  }
