// gmm's shared schedule (included by gmm.comp): the workgroup stages [TM, TK] of lhs and [TK, TN] of rhs
// in shared memory per K step, and each invocation reduces its RM x RN accumulators from there.

// ----- the shared schedule's staging: chunks of 4 elements along each operand's contiguous axis ----------
// lhs [TM, TK] K-major (stage_kmajor.glsl), TM rows per K step; rhs [TK, TN * HALVES] as TK x TN*HALVES/4 chunks
// along N, stored whole, or transposed (rhs [n, k]) K-major, TN * HALVES product columns per K step.
// Invocation lid takes chunks lid + s * NT (rhs [k, n] in the matrix builds: stage_lines.glsl's quads, where
// the invocations divide its chunks in fours): their sources and their places in the stage stay the same
// from one K step to the next, so both are computed once (a_src / b_src: the chunk's first element at K
// step 0; a_dst / b_dst) and a step only adds its K offset, the same for the whole workgroup. The next
// step's chunks are loaded into registers (a_next, b_next) while the current one is computed from shared
// memory, and with two buffers (stage.glsl's STAGES) stored into the other one before the step's barrier:
// stage.glsl's stage_steps, the loop of both ops.
//
// No bounds check runs in the main loop: rows past m read row m - 1 and columns past n the tile's first
// column instead (in bounds; their products are never stored), and the K steps end at k: the first step
// is the ragged one, starting before K = 0 (its values there are zero), so every later step lies in K.
const uint NT = TX * TY * K_SLICES;  // the workgroup's invocations
#include "stage_kmajor.glsl"
#include "stage_lines.glsl"
const uint TNH = TN * HALVES;  // the tile's product columns
const uint A_CHUNKS = TM * TK / 4, B_CHUNKS = TK * TNH / 4;
const uint CA = (A_CHUNKS + NT - 1) / NT, CB = (B_CHUNKS + NT - 1) / NT;
// Every invocation has all its chunks (no check) when the invocations divide them.
const bool A_EVEN = A_CHUNKS % NT == 0, B_EVEN = B_CHUNKS % NT == 0;
// rhs [k, n] in quads (stage_lines.glsl; read only where rhs is [k, n]).
const bool B_QUADS = LINES_QUADS(B_CHUNKS);
uint a_src[CA], b_src[CB];
uint a_dst[CA], b_dst[CB];  // the chunk's first value's place in the stage (stage.glsl)
bvec4 b_cols[CB];           // rhs [k, n] without VEC4: which of the chunk's 4 columns are in the problem
// The chunks in flight, as loaded (dtype.glsl's staged chunks: 16-bit ones packed until stage_store).
const bool A_PACKED = VEC4 && LHS_TYPE != DT_F32;
const bool B_PACKED = VEC4 && !RHS_BLOCKS && RHS_TYPE != DT_F32;
uvec4 a_next[CA], b_next[CB];

// With VEC4 a chunk's 4 elements are all in range or all out (k, n multiples of 4): one load.
VKGMM_DEFINE_MASKED_LOAD4(lhs4_masked, load_lhs, load4_lhs, VEC4)
#ifdef VKGMM_BLOCK_RHS
// A block format's chunks are always 4 values of one quad (dequant4's), all in range or all out: its rows
// are whole blocks along rhs's contiguous axis (the host's check: k or n a multiple of 32), and a chunk's
// first value there is a multiple of 4. In [n, k] a K offset, TK and the ragged first step's k0 being
// multiples of 4; in [k, n] a product column, n or (gated) its halves, n / 2 apart, multiples of 16.
vec4 rhs4_masked(uint i, bvec4 ok) { return ok.x ? load4_rhs(i) : vec4(0.0); }
#else
VKGMM_DEFINE_MASKED_LOAD4(rhs4_masked, load_rhs, load4_rhs, VEC4)
#endif
VKGMM_DEFINE_PACKED16_LOAD4(lhs4_packed, lhs)
VKGMM_DEFINE_PACKED16_LOAD4(rhs4_packed, rhs)
VKGMM_DEFINE_STAGED_LOAD4(lhs4_staged, lhs4_masked, lhs4_packed, A_PACKED)
VKGMM_DEFINE_STAGED_LOAD4(rhs4_staged, rhs4_masked, rhs4_packed, B_PACKED)

// rhs [k, n]: invocation lid's chunk s's K row within a step.
uint b_krow(uint lid, uint s) { return lines_k(B_QUADS, lid, s, TNH); }
// A block format's values stay f32 to the stage, which splits them (STAGE_SPLIT_B).
#ifdef VKGMM_BLOCK_RHS
vec4 b_values(uvec4 chunk) { return staged_values(chunk, B_PACKED, RHS_TYPE); }
#else
STAGE_VALUES b_values(uvec4 chunk) { return stage_values(chunk, B_PACKED, RHS_TYPE); }
#endif

// Where invocation lid's chunks come from and go, for the tile at (m0, n0) of group g_local. Where the
// invocations divide a K step's chunks of one row (column), all of an invocation's chunks share its first
// chunk's row (column) and lie a constant number of K rows after it: one address, constant offsets.
void stage_sources(uint lid, uint m0, uint n0, uint g_local) {
  [[unroll]] for (uint s = 0; s < CA; ++s) {
    uint e = lid + s * NT;
    if (kmajor_on_first_line(s, TM)) {
      a_src[s] = a_src[0] + kmajor_k_past(lid, s, TM);
      a_dst[s] = a_dst[0] + kmajor_place_past(s, TM);
      continue;
    }
    uint row = min(m0 + kmajor_line(e, TM), pc.m - 1u);  // m0 comes from the visit list: clamped, whatever it holds
    a_src[s] = pc.lhs_off + lhs_row(row) * pc.k + kmajor_k(e, TM);
    a_dst[s] = kmajor_place(e, TM);
  }
  [[unroll]] for (uint s = 0; s < CB; ++s) {
    uint e = lid + s * NT;
    uint j = TRANSPOSE_RHS ? kmajor_line(e, TNH) : lines_line(B_QUADS, lid, s, TNH);  // the chunk's (first) product column
    uint col = n0 + j % TN;
    b_cols[s] = run_in(col, pc.out_n);
    if (TRANSPOSE_RHS) {
      if (kmajor_on_first_line(s, TNH)) {
        b_src[s] = b_src[0] + kmajor_k_past(lid, s, TNH);
        b_dst[s] = b_dst[0] + kmajor_place_past(s, TNH);
        continue;
      }
      b_src[s] = rhs_index(g_local, kmajor_k(e, TNH), product_col(j / TN, col < pc.out_n ? col : n0));
      b_dst[s] = kmajor_place(e, TNH);
      continue;
    }
    // rhs [k, n]: in quads, the quad's lines, K rows after its first chunk's.
    if (lines_in_quad(B_QUADS, s)) {
      b_src[s] = b_src[lines_quad_first(s)] + (s % 4u) * pc.n;
      continue;
    }
    // One by one: the chunks of one K row.
    if (lines_one_by_one(B_QUADS) && s > 0 && NT % (TNH / 4) == 0) {
      b_src[s] = b_src[0] + (b_krow(lid, s) - b_krow(lid, 0u)) * pc.n;
      b_dst[s] = b_dst[0] + s * NT / (TNH / 4) * stage_step_stride(TNH);
      continue;
    }
    const uint krow = b_krow(lid, s);
    b_src[s] = rhs_index(g_local, krow, product_col(j / TN, col < pc.out_n ? col : n0));
    b_dst[s] = stage_place(j, krow, TNH);
  }
}

// Load the chunks of the K step at k0 into a_next / b_next. The first step (`first`, a constant where
// it is called) may start before K = 0: its values there are zero, never read; every other step lies in K.
void stage_load(int k0, const bool first) {
  [[unroll]] for (uint s = 0; s < CA; ++s) {
    uint e = local_index() + s * NT;
    if (!A_EVEN && e >= A_CHUNKS) continue;
    a_next[s] = lhs4_staged(a_src[s] + uint(k0), kmajor_reads(k0 + int(kmajor_k(e, TM)), 0, first));
  }
  [[unroll]] for (uint s = 0; s < CB; ++s) {
    uint e = local_index() + s * NT;
    if (!B_EVEN && e >= B_CHUNKS) continue;
    // One call for both layouts: drivers inline a call before they drop the layout not taken, and a
    // block format's decoder is most of this pipeline's code.
    bvec4 cols = VEC4 ? bvec4(true) : b_cols[s];
    uint at = b_src[s] + (TRANSPOSE_RHS ? uint(k0) : uint(k0) * pc.n);
    bvec4 ok = TRANSPOSE_RHS ? kmajor_reads(k0 + int(kmajor_k(e, TNH)), 0, first)
                             : first && k0 + int(b_krow(local_index(), s)) < 0 ? bvec4(false) : cols;
    b_next[s] = rhs4_staged(at, ok);
  }
}

// Store a_next / b_next into the stage: lhs chunks and rhs [n, k]'s along their line (4 K rows), rhs
// [k, n]'s as stage_lines.glsl stores them.
void stage_store() {
  [[unroll]] for (uint s = 0; s < CA; ++s) {
    uint e = local_index() + s * NT;
    if (!A_EVEN && e >= A_CHUNKS) continue;
    kmajor_store(false, a_dst[s], TM, stage_values(a_next[s], A_PACKED, LHS_TYPE));
  }
  [[unroll]] for (uint s = 0; s < CB; ++s) {
    uint e = local_index() + s * NT;
    if (!B_EVEN && e >= B_CHUNKS) continue;
    if (TRANSPOSE_RHS) {
      kmajor_store(true, b_dst[s], TNH, b_values(b_next[s]));
    } else {
      LINES_STORE(B_QUADS, true, s, CB, b_dst[s], b_next, b_values);
    }
  }
}

// The K steps: ceil(k / TK) of them ending at k, the first one ragged (see the staging above); returns
// the first's K offset.
int first_k_step(out uint steps) {
  steps = (pc.k + TK - 1) / TK;
  return int(pc.k) - int(steps * TK);
}

#ifndef VKGMM_MATRIX
// One K step's FMAs from the stage, the invocation's operands at As4[a_at + ...] and Bs4[b_at + ...]: its
// first vec4s in the step's buffer, every read that plus a constant, which compilers keep in the load's offset.
void fma_step(uint a_at, uint b_at) {
  [[unroll]] for (uint kk = 0; kk < TK; ++kk) {
    vec4 a[(RM + 3) / 4], b[ACC4_COLS];  // RM is a multiple of 4 here; never 0 where this branch is dead
    [[unroll]] for (uint u = 0; u < RM / 4; ++u) a[u] = As4[a_at + kk * (TM / 4) + u * TY];
    [[unroll]] for (uint v = 0; v < ACC4_COLS; ++v)
      b[v] = Bs4[b_at + kk * (TNH / 4) + (v / VN) * (TN / 4) + (v % VN) * TX];
    [[unroll]] for (uint i = 0; i < RM; ++i)
      [[unroll]] for (uint v = 0; v < ACC4_COLS; ++v)
        acc4[i * ACC4_COLS + v] = fma(vec4(a[i / 4][i % 4]), b[v], acc4[i * ACC4_COLS + v]);
  }
}
#endif

// The staged loop's next chunks (stage.glsl's stage_steps).
void stage_load_next(int k0) { stage_load(k0, false); }

// One tile's reduction over K: into acc4 (row i, column group v at i * ACC4_COLS + v), or in the matrix builds
// into the cooperative matrices' accumulators (matrix_tile.glsl's, which the includer zeroes and finishes).
void reduce_shared(uint lid, uint m0, uint n0, uint g_local, uint tx, uint ty) {
  stage_sources(lid, m0, n0, g_local);
  uint steps;
  int k0 = first_k_step(steps);
  if (steps > 0) stage_load(k0, true);
  stage_steps(k0, int(pc.k), int(TK), steps > 0, tx, ty);
}
