// The shared schedules' staging of a K-major tile (gmm.comp's lhs and rhs [n, k], tgmm.comp's lhs
// [k, m]): a tile whose contiguous axis is the reduction, K, with `lines` rows or columns (a multiple of
// 4) per K step, read in chunks of 4 K values of one line, one load each. Chunk e is line e % lines, its
// values from K offset (e / lines) * 4 of the step on. The stage is K-major too, so that an invocation's
// 4 adjacent lines are one 16-byte read: K row kk of the step holds its lines, lines / 4 vec4s. A chunk
// goes there as 4 K rows, component line & 3 of each: neighbouring lanes take neighbouring lines, so
// those stores hit consecutive banks with no padding.
//
// Invocation lid takes chunks lid + s * NT (NT, the includer's: the workgroup's invocations). Their
// sources (the chunk's first element at K offset 0 of the tile) and places in the stage are computed
// once per tile; a step adds its K offset to the source, the same for the whole workgroup.

uint kmajor_line(uint e, uint lines) { return e % lines; }
uint kmajor_k(uint e, uint lines) { return (e / lines) * 4u; }
// The chunk's first vec4 in the stage; kmajor_row gives the others.
uint kmajor_place(uint e, uint lines) { return kmajor_k(e, lines) * (lines / 4u) + kmajor_line(e, lines) / 4u; }

// Where the invocations divide the lines (NT % lines == 0), invocation lid's chunk s lies on the line of
// its chunk 0, kmajor_k_past K values and kmajor_place_past vec4s of the stage after it: one address,
// constant offsets.
bool kmajor_on_first_line(uint s, uint lines) { return s > 0u && NT % lines == 0u; }
uint kmajor_k_past(uint lid, uint s, uint lines) { return kmajor_k(lid + s * NT, lines) - kmajor_k(lid, lines); }
uint kmajor_place_past(uint s) { return s * NT; }

// Which of a chunk's 4 values a step reads, the first at `at` of a reduction that starts at `begin`: the
// ragged first step (`first`, a constant where it is called) starts before it, and its values there are
// zero, never read; every other step lies in the reduction.
bvec4 kmajor_reads(int at, int begin, const bool first) {
  return first ? greaterThanEqual(ivec4(at) + ivec4(0, 1, 2, 3), ivec4(begin)) : bvec4(true);
}

// The chunk's values v into the lhs stage, or the rhs one with `to_b` (a constant where it is called: a
// shared array cannot be passed to a function): K row q at kmajor_row, component line & 3, which is e & 3
// (lines is a multiple of 4; NT need not be one: 12 invocations happen), through stage.glsl's
// stage_put, which the includer includes first.
uint kmajor_row(uint place, uint q, uint lines) { return place + q * (lines / 4u); }
void kmajor_store(const bool to_b, uint place, uint e, uint lines, vec4 v) {
  [[unroll]] for (uint q = 0; q < 4; ++q) stage_put(to_b, kmajor_row(place, q, lines), e & 3u, v[q]);
}
