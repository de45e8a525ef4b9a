#version 450
// tgmm: out[j, k, n] = lhs[:, rows(g)] @ rhs[rows(g), :] for g = group_offset + j (+ existing_out[j]).
//
// The grid is (n tiles) x (k tiles) x (active groups), or with SPLIT x (work items, each a run of one
// group's rows), or with PERSISTENT a fixed number of workgroups looping over those blocks. A workgroup owns one [TK, TN] block of one group's
// output, walks that group's rows TM at a time (the last chunk masked at the group's end), accumulates
// in fp32 registers and stores the block once. An empty group's block is still stored (0 or existing_out).
//
// lhs is [k, m], or [m, k] with LHS_MK (the backward reads the forward's lhs as lhs^T in place);
// the output block is stored [k, n], or [n, k] with OUT_NK (the gradient of a transposed rhs).
// Schedules as in gmm.comp: USE_SHARED stages [TM, TK] of lhs^T and [TM, TN] of rhs in shared memory,
// loading the next rows' chunks into registers while the current ones are computed; otherwise each
// invocation reads its micro-tile's operands straight from the buffers.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef VKGMM_MATRIX
#include "coopmat.glsl"
#endif

#include "bindings.glsl"
#include "dtype.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;  // TX * TY invocations
#include "invocation.glsl"
layout(constant_id = VKGMM_ID_STEP) const uint TM = 64;  // rows of the group per step
layout(constant_id = VKGMM_ID_BLOCK_ROWS) const uint TK = 64;  // output block rows (k)
layout(constant_id = VKGMM_ID_BLOCK_COLS) const uint TN = 64;  // output block columns (n)
layout(constant_id = VKGMM_ID_TX) const uint TX = 16;
layout(constant_id = VKGMM_ID_TY) const uint TY = 16;
layout(constant_id = VKGMM_ID_ROWS_PER_INV) const uint RK = 4;  // ceil(TK / TY)
layout(constant_id = VKGMM_ID_COLS_PER_INV) const uint RN = 4;  // ceil(TN / TX)
layout(constant_id = VKGMM_ID_LHS_TYPE) const uint LHS_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_RHS_TYPE) const uint RHS_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_OUT_TYPE) const uint OUT_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_TGMM_LHS_MK) const bool LHS_MK = false;
layout(constant_id = VKGMM_ID_USE_SHARED) const bool USE_SHARED = true;
layout(constant_id = VKGMM_ID_HAS_EXISTING) const bool HAS_EXISTING = false;
// The stage's lengths (stage.glsl), 1 when unused: TM * TK and TM * TN on FMAs; the matrix builds'
// line-major stage pads each line.
layout(constant_id = VKGMM_ID_SHARED_A) const uint SHARED_A = 1;
layout(constant_id = VKGMM_ID_SHARED_B) const uint SHARED_B = 1;
layout(constant_id = VKGMM_ID_TGMM_OUT_NK) const bool OUT_NK = false;
// rhs read as vec4 along N (n and rhs's offset multiples of 4). Direct schedule: each invocation owns
// RN/4 groups of 4 adjacent columns, and takes the group's rows 4 at a time so each accumulator gets
// four FMAs per visit (a CPU driver keeps few of them in registers). Shared schedule: its staging loads.
layout(constant_id = VKGMM_ID_VEC4) const bool VEC4 = false;
// VEC4 and lhs read 4 elements at a time (lhs's offset a multiple of 4). With lhs stored [m, k] (LHS_MK,
// k a multiple of 4): each invocation owns RK/4 groups of 4 adjacent k rows of the block, and reads them
// for a row of lhs as one vec4. With lhs [k, m] (m a multiple of 4): a k row's elements for 4 rows of the
// group are one vec4 (the direct schedule only: the shared one's steps start at any row).
layout(constant_id = VKGMM_ID_TGMM_VEC4_LHS) const bool VEC4_LHS = false;
// The block stored 4 adjacent columns at a time (one vector store; VEC4 or USE_SHARED, out [k, n], n a
// multiple of 4): a CPU driver stores a lane's vector in one pass over the lanes, and a 16-bit out takes
// one store per 4 elements instead of a read-modify-write per element.
layout(constant_id = VKGMM_ID_TGMM_VEC4_OUT) const bool VEC4_OUT = false;
// The persistent grid (interface.h): main() loops over the work items instead of running one.
layout(constant_id = VKGMM_ID_PERSISTENT) const bool PERSISTENT = false;
// Work items from the metadata (interface.h's VKGMM_TGMM_ITEM_*): a long group's rows are reduced in
// chunks by several workgroups, each storing its fp32 partial sum to a slot the combine then sums in order.
layout(constant_id = VKGMM_ID_TGMM_SPLIT) const bool SPLIT = false;
layout(std430, set = 0, binding = VKGMM_BINDING_TGMM_PARTIAL) buffer PartialBuf { uint partial_buf[]; };

layout(push_constant) uniform Params { VKGMM_TGMM_PUSH(VKGMM_PUSH_FIELD) } pc;

VKGMM_DEFINE_INPUT_LOADS(load_lhs, load4_lhs, lhs, LHS_TYPE)
VKGMM_DEFINE_INPUT_LOADS(load_rhs, load4_rhs, rhs, RHS_TYPE)
VKGMM_DEFINE_LOAD(load_ex, ex, OUT_TYPE)

// The block row (k) of invocation ty's i-th row: one per invocation at stride TY, or with VEC4_LHS
// groups of 4 adjacent rows at stride 4 * TY.
uint krow_of(uint ty, uint i) {
  if ((VEC4_LHS && LHS_MK) || USE_SHARED) return ((i >> 2) * TY + ty) * 4u + (i & 3u);
  return ty + i * TY;
}

// The output column of invocation tx's j-th column (see VEC4; groups of 4 in the shared schedule too).
uint col_of(uint tx, uint j) {
  if (VEC4 || USE_SHARED) return ((j >> 2) * TX + tx) * 4u + (j & 3u);
  return tx + j * TX;
}

uint lhs_index(uint kk, uint row) {
  return pc.lhs_off + (LHS_MK ? row * pc.k + kk : kk * pc.m + row);
}

// ----- the shared schedule (see gmm.comp's, the same scheme with the group's rows as the reduction) ------
// The stage (stage.glsl); on FMAs row-major so that an invocation's 4 adjacent k rows (columns) are one
// 16-byte read: As[c][k row] and Bs[c][column] for the step's group row c.
#define STAGE_DEPTH TM
#define STAGE_SPLIT_B false
#include "stage.glsl"
// Chunks of 4 elements along each operand's contiguous axis: lhs [m, k] (LHS_MK) as TM x TK/4 chunks along
// k (stage_lines.glsl); lhs [k, m] K-major (stage_kmajor.glsl: the group's rows are the reduction), TK k rows
// per step; rhs as TM x TN/4 chunks along n (stage_lines.glsl). Invocation lid takes chunks lid + s * NT
// (lhs [m, k] and rhs in the matrix builds: stage_lines.glsl's quads, where they divide in fours), whose sources from
// the group's row 0 (a_src, b_src) and places in the stage (a_dst, b_dst) are computed once; a step adds its
// first row. The next step's chunks are loaded into a_next / b_next while the current one computes.
//
// No bounds check runs in the main loop: k rows past k and columns past n read the block's first
// instead (in bounds; never stored), and the steps end at the group's end: the first step is the ragged
// one, starting before the group (rows there are zero), so every later step lies in the group. lhs
// [k, m] is read 4 elements at a time but not as one vec4: the steps start at any row.
const uint NT = TX * TY;
#include "stage_kmajor.glsl"
#include "stage_lines.glsl"
const uint A_CHUNKS = TK * TM / 4, B_CHUNKS = TM * TN / 4;
// The chunks each invocation copies per K step.
const uint A_CHUNKS_EACH = (A_CHUNKS + NT - 1) / NT, B_CHUNKS_EACH = (B_CHUNKS + NT - 1) / NT;
const bool A_EVEN = A_CHUNKS % NT == 0, B_EVEN = B_CHUNKS % NT == 0;
// lhs [m, k] and rhs in quads (stage_lines.glsl; A_QUADS read only where lhs is [m, k]).
const bool A_QUADS = LINES_QUADS(A_CHUNKS), B_QUADS = LINES_QUADS(B_CHUNKS);
uint a_src[A_CHUNKS_EACH], b_src[B_CHUNKS_EACH];
uint a_dst[A_CHUNKS_EACH], b_dst[B_CHUNKS_EACH];  // the chunk's first value's place in the stage (stage.glsl)
bvec4 a_k[A_CHUNKS_EACH], b_cols[B_CHUNKS_EACH];  // LHS_MK without VEC4_LHS: which of its 4 k values are in the problem; rhs: columns
// The chunks in flight, as loaded (dtype.glsl's staged chunks: 16-bit ones packed until stage_store).
const bool A_PACKED = VEC4_LHS && LHS_MK && LHS_TYPE != DT_F32;
const bool B_PACKED = VEC4 && RHS_TYPE != DT_F32;
uvec4 a_next[A_CHUNKS_EACH], b_next[B_CHUNKS_EACH];
VKGMM_DEFINE_MASKED_LOAD4(lhs4_masked, load_lhs, load4_lhs, VEC4_LHS && LHS_MK)
VKGMM_DEFINE_MASKED_LOAD4(rhs4_masked, load_rhs, load4_rhs, VEC4)
VKGMM_DEFINE_PACKED16_LOAD4(lhs4_packed, lhs)
VKGMM_DEFINE_PACKED16_LOAD4(rhs4_packed, rhs)
VKGMM_DEFINE_STAGED_LOAD4(lhs4_staged, lhs4_masked, lhs4_packed, A_PACKED)
VKGMM_DEFINE_STAGED_LOAD4(rhs4_staged, rhs4_masked, rhs4_packed, B_PACKED)

// Invocation lid's chunk s's first group row within a step.
uint a_row(uint lid, uint s) { return LHS_MK ? lines_k(A_QUADS, lid, s, TK) : kmajor_k(lid + s * NT, TK); }
uint b_row(uint lid, uint s) { return lines_k(B_QUADS, lid, s, TN); }
STAGE_VALUES a_values(uvec4 chunk) { return stage_values(chunk, A_PACKED, LHS_TYPE); }
STAGE_VALUES b_values(uvec4 chunk) { return stage_values(chunk, B_PACKED, RHS_TYPE); }

// Where the invocations divide a step's chunks of one k run (k row, column run), all of an invocation's
// chunks share its first chunk's and lie a constant number of group rows after it: one address, constant
// offsets (as in gmm.comp).
void stage_sources(uint lid, uint k0, uint n0) {
  [[unroll]] for (uint s = 0; s < A_CHUNKS_EACH; ++s) {
    uint e = lid + s * NT;
    if (!LHS_MK) {
      if (kmajor_on_first_line(s, TK)) {
        a_src[s] = a_src[0] + kmajor_k_past(lid, s, TK);
        a_dst[s] = a_dst[0] + kmajor_place_past(s, TK);
        continue;
      }
      uint kk = k0 + kmajor_line(e, TK);
      a_src[s] = pc.lhs_off + (kk < pc.k ? kk : k0) * pc.m + kmajor_k(e, TK);
      a_dst[s] = kmajor_place(e, TK);
      continue;
    }
    // lhs [m, k]: in quads, the quad's k rows, group rows after its first chunk's.
    if (lines_in_quad(A_QUADS, s)) {
      a_k[s] = a_k[lines_quad_first(s)];
      a_src[s] = a_src[lines_quad_first(s)] + (s % 4u) * pc.k;
      continue;
    }
    // One by one: the chunks of one group row.
    if (lines_one_by_one(A_QUADS) && s > 0 && NT % (TK / 4) == 0) {
      a_k[s] = a_k[0];
      a_src[s] = a_src[0] + (a_row(lid, s) - a_row(lid, 0u)) * pc.k;
      a_dst[s] = a_dst[0] + s * NT / (TK / 4) * stage_step_stride(TK);
      continue;
    }
    const uint line = lines_line(A_QUADS, lid, s, TK), row = a_row(lid, s);
    uint kk = k0 + line;
    a_k[s] = run_in(kk, pc.k);
    a_src[s] = pc.lhs_off + row * pc.k + (kk < pc.k ? kk : k0);
    a_dst[s] = stage_place(line, row, TK);
  }
  [[unroll]] for (uint s = 0; s < B_CHUNKS_EACH; ++s) {
    if (lines_in_quad(B_QUADS, s)) {
      b_cols[s] = b_cols[lines_quad_first(s)];
      b_src[s] = b_src[lines_quad_first(s)] + (s % 4u) * pc.n;
      continue;
    }
    if (lines_one_by_one(B_QUADS) && s > 0 && NT % (TN / 4) == 0) {
      b_cols[s] = b_cols[0];
      b_src[s] = b_src[0] + (b_row(lid, s) - b_row(lid, 0u)) * pc.n;
      b_dst[s] = b_dst[0] + s * NT / (TN / 4) * stage_step_stride(TN);
      continue;
    }
    const uint line = lines_line(B_QUADS, lid, s, TN), row = b_row(lid, s);
    uint col = n0 + line;
    b_cols[s] = run_in(col, pc.n);
    b_src[s] = pc.rhs_off + row * pc.n + (col < pc.n ? col : n0);
    b_dst[s] = stage_place(line, row, TN);
  }
}

// The chunks of the step from group row r0. The first step (`first`, a constant where it is called) may
// start before the group: its rows there are zero, never read; every other step lies in the group.
void stage_load(int r0, uint gstart, const bool first) {
  [[unroll]] for (uint s = 0; s < A_CHUNKS_EACH; ++s) {
    uint e = local_index() + s * NT;
    if (!A_EVEN && e >= A_CHUNKS) continue;
    int row = r0 + int(a_row(local_index(), s));
    if (LHS_MK) {
      bvec4 ks = VEC4_LHS ? bvec4(true) : a_k[s];
      a_next[s] = lhs4_staged(a_src[s] + uint(r0) * pc.k, first && row < int(gstart) ? bvec4(false) : ks);
    } else {
      a_next[s] = lhs4_staged(a_src[s] + uint(r0), kmajor_reads(row, int(gstart), first));
    }
  }
  [[unroll]] for (uint s = 0; s < B_CHUNKS_EACH; ++s) {
    uint e = local_index() + s * NT;
    if (!B_EVEN && e >= B_CHUNKS) continue;
    bvec4 cols = VEC4 ? bvec4(true) : b_cols[s];
    bool before = first && r0 + int(b_row(local_index(), s)) < int(gstart);
    b_next[s] = rhs4_staged(b_src[s] + uint(r0) * pc.n, before ? bvec4(false) : cols);
  }
}

void stage_store() {
  [[unroll]] for (uint s = 0; s < A_CHUNKS_EACH; ++s) {
    uint e = local_index() + s * NT;
    if (!A_EVEN && e >= A_CHUNKS) continue;
    if (LHS_MK) {
      LINES_STORE(A_QUADS, false, s, A_CHUNKS_EACH, a_dst[s], a_next, a_values);
    } else {
      kmajor_store(false, a_dst[s], TK, a_values(a_next[s]));
    }
  }
  [[unroll]] for (uint s = 0; s < B_CHUNKS_EACH; ++s) {
    uint e = local_index() + s * NT;
    if (!B_EVEN && e >= B_CHUNKS) continue;
    LINES_STORE(B_QUADS, true, s, B_CHUNKS_EACH, b_dst[s], b_next, b_values);
  }
}

// The shared schedules' steps: ceil(rows / TM) of them ending at the group's end, the first one ragged
// (see the staging above); returns the first's group row.
int first_row_step(uint gstart, uint gend, out uint steps) {
  steps = gend > gstart ? (gend - gstart + TM - 1) / TM : 0u;
  return int(gend) - int(steps * TM);
}

// The VEC4 schedule: vec4 column groups per invocation (RN is a multiple of 4 there; never 0, even where
// that branch is dead), and its step for one row of the group (a macro: arrays sized by specialization
// constants cannot be passed to functions).
const uint VN = (RN + 3) / 4;
#define VKGMM_ADD_ROW(row)                                                                               \
  [[unroll]] for (uint i = 0; i < RK; ++i) {                                                             \
    float a1 = load_lhs(lhs_index(krow[i], row));                                                        \
    [[unroll]] for (uint v = 0; v < VN; ++v)                                                             \
      acc4[i * VN + v] = fma(vec4(a1), load4_rhs(pc.rhs_off + (row) * pc.n + bcol[v]), acc4[i * VN + v]); \
  }

// The work item's chunk slot (SPLIT), -1 where its block is the group's whole sum.
int item_slot = -1;

// Element idx of output group j_group's block (out's layout): the sum v plus existing_out into out, or a
// chunk's partial sum into its slot.
void store_element(uint j_group, uint idx, float v) {
  if (SPLIT && item_slot >= 0) {
    partial_buf[pc.bias_off + uint(item_slot) * pc.k * pc.n + idx] = floatBitsToUint(v);
    return;
  }
  idx += j_group * pc.k * pc.n;
  store_out(pc.out_off + idx, HAS_EXISTING ? v + load_ex(pc.ex_off + idx) : v, OUT_TYPE);
}

// Block row kk, columns col .. col + 3 (col a multiple of 4 with VEC4_OUT) of output group j_group: the
// sums v, plus existing_out, stored 4 at a time with VEC4_OUT (out [k, n]), else those below n one by one.
void store_block4(uint j_group, uint kk, uint col, vec4 v) {
  const uint block = j_group * pc.k * pc.n;
  if (VEC4_OUT && !OUT_NK && !(SPLIT && item_slot >= 0)) {
    const uint idx = block + kk * pc.n + col;
    if (HAS_EXISTING) [[unroll]] for (uint q = 0; q < 4; ++q) v[q] += load_ex(pc.ex_off + idx + q);
    store4_out(pc.out_off + idx, v, OUT_TYPE);
    return;
  }
  [[unroll]] for (uint q = 0; q < 4; ++q)
    if (col + q < pc.n) store_element(j_group, OUT_NK ? (col + q) * pc.k + kk : kk * pc.n + col + q, v[q]);
}

#ifdef VKGMM_MATRIX
// The matrix-unit schedule: the shared schedule's staging into the f16 stage, the products on
// cooperative matrices (matrix_tile.glsl), the group's rows the reduction.
#define MT_ROWS TK
#define MT_COLS TN
#define MT_STEP TM
#define MT_HALVES 1u
// The block being stored (matrix_store4 reads it).
uint mt_k0, mt_n0, mt_group;
void matrix_store4(uint r, uint c, vec4 v, vec4 u) {
  const uint kk = mt_k0 + r, col = mt_n0 + c;
  if (kk < pc.k && col < pc.n) store_block4(mt_group, kk, col, v);
}
#include "matrix_tile.glsl"
#endif

// The shared schedule's and the VEC4 schedule's accumulators: k row i, column group v at i * VN + v.
vec4 acc4[RK * VN];

#ifndef VKGMM_MATRIX
// One step's FMAs from the stage, the invocation's operands at As4[a_at + ...] and Bs4[b_at + ...] (as
// gmm_shared.glsl's fma_step).
void fma_step(uint a_at, uint b_at) {
  [[unroll]] for (uint c = 0; c < TM; ++c) {
    vec4 a[(RK + 3) / 4], b[VN];  // RK is a multiple of 4 here; never 0 where this branch is dead
    [[unroll]] for (uint u = 0; u < RK / 4; ++u) a[u] = As4[a_at + c * (TK / 4) + u * TY];
    [[unroll]] for (uint v = 0; v < VN; ++v) b[v] = Bs4[b_at + c * (TN / 4) + v * TX];
    [[unroll]] for (uint i = 0; i < RK; ++i)
      [[unroll]] for (uint v = 0; v < VN; ++v) acc4[i * VN + v] = fma(vec4(a[i / 4][i % 4]), b[v], acc4[i * VN + v]);
  }
}
#endif

// The staged loop's next chunks (stage.glsl's stage_steps): gstart bounds only the first step's reads.
void stage_load_next(int r0) { stage_load(r0, 0u, false); }

// One block's reduction over the group's rows (gstart .. gend) on the stage: into acc4, or in the matrix
// builds into the cooperative matrices' accumulators (matrix_tile.glsl's, which the caller zeroes and
// finishes).
void reduce_shared(uint lid, uint k0, uint n0, uint gstart, uint gend, uint tx, uint ty) {
  stage_sources(lid, k0, n0);
  uint steps;
  int r0 = first_row_step(gstart, gend, steps);
  if (steps > 0) stage_load(r0, gstart, true);
  stage_steps(r0, int(gend), int(TM), steps > 0, tx, ty);
}

// One work item's block (k_block, n_block) (the workgroup's whole job on the per-block grid): output group
// `item`'s, or with SPLIT the metadata's item's. Its barriers stay in uniform control flow: the arguments
// are the workgroup's.
void run_block(uint item, uint k_block, uint n_block) {
  if (item >= pc.num_items) return;
  uint j_group = item, gstart, gend;
  if (SPLIT) {
    const uint at = pc.items_off + item * VKGMM_TGMM_ITEM_WORDS;
    j_group = uint(meta[at + VKGMM_TGMM_ITEM_GROUP]);
    // The padding of a list built on the device (VKGMM_NO_VISIT), or any group past the plan's.
    if (j_group >= pc.num_groups) return;
    gstart = uint(meta[at + VKGMM_TGMM_ITEM_BEGIN]);
    gend = uint(meta[at + VKGMM_TGMM_ITEM_END]);
    item_slot = meta[at + VKGMM_TGMM_ITEM_SLOT];
  } else {
    uint group = pc.group_offset + j_group;
    gstart = uint(meta[group]);
    gend = uint(meta[group + 1]);
  }
  uint k0 = k_block * TK;
  uint n0 = n_block * TN;
  uint lid = local_index();
  uint tx = lid % TX, ty = lid / TX;

#ifdef VKGMM_MATRIX
  matrix_zero();
  reduce_shared(lid, k0, n0, gstart, gend, tx, ty);
  matrix_finish();
  mt_k0 = k0;
  mt_n0 = n0;
  mt_group = j_group;
  matrix_store();
  return;
#endif

  float acc[RK * RN];
  [[unroll]] for (uint e = 0; e < RK * RN; ++e) acc[e] = 0.0;

  if (USE_SHARED) {
    [[unroll]] for (uint e = 0; e < RK * VN; ++e) acc4[e] = vec4(0.0);
    reduce_shared(lid, k0, n0, gstart, gend, tx, ty);
    [[unroll]] for (uint i = 0; i < RK; ++i)
      [[unroll]] for (uint v = 0; v < VN; ++v)
        [[unroll]] for (uint c = 0; c < 4; ++c) acc[i * RN + v * 4 + c] = acc4[i * VN + v][c];
  } else if (VEC4) {
    uint krow[RK], bcol[VN];
    // With VEC4_LHS, krow[4 * u] starts a group of 4 adjacent rows, all in range or all past it (k % 4 == 0).
    [[unroll]] for (uint i = 0; i < RK; ++i)
      krow[i] = VEC4_LHS && LHS_MK ? min(k0 + krow_of(ty, i), pc.k - 4u + (i & 3u)) : min(k0 + krow_of(ty, i), pc.k - 1);
    [[unroll]] for (uint v = 0; v < VN; ++v) bcol[v] = min(n0 + col_of(tx, v * 4u), pc.n - 4u);
    [[unroll]] for (uint e = 0; e < RK * VN; ++e) acc4[e] = vec4(0.0);
    // VEC4_LHS with lhs [k, m] (m and lhs's offset multiples of 4): once the row is a multiple of 4,
    // lhs[krow][row .. row + 3] is one vec4; the group's first rows, up to there, go one at a time.
    uint row = gstart;
    if (VEC4_LHS && !LHS_MK)
      for (; row < gend && ((pc.lhs_off + row) & 3u) != 0; ++row) { VKGMM_ADD_ROW(row) }
    for (; row + 4 <= gend; row += 4) {
      vec4 a[RK];  // a[i][q] = lhs[krow[i]][row + q]
      vec4 b[4 * VN];
      if (VEC4_LHS && LHS_MK) {
        [[unroll]] for (uint q = 0; q < 4; ++q)
          [[unroll]] for (uint u = 0; u < RK / 4; ++u) {
            vec4 a4 = load4_lhs(pc.lhs_off + (row + q) * pc.k + krow[4 * u]);
            [[unroll]] for (uint c = 0; c < 4; ++c) a[4 * u + c][q] = a4[c];
          }
      } else if (VEC4_LHS) {
        [[unroll]] for (uint i = 0; i < RK; ++i) a[i] = load4_lhs(lhs_index(krow[i], row));
      } else {
        [[unroll]] for (uint i = 0; i < RK; ++i)
          [[unroll]] for (uint q = 0; q < 4; ++q) a[i][q] = load_lhs(lhs_index(krow[i], row + q));
      }
      [[unroll]] for (uint q = 0; q < 4; ++q)
        [[unroll]] for (uint v = 0; v < VN; ++v) b[q * VN + v] = load4_rhs(pc.rhs_off + (row + q) * pc.n + bcol[v]);
      [[unroll]] for (uint i = 0; i < RK; ++i)
        [[unroll]] for (uint v = 0; v < VN; ++v) {
          vec4 c = acc4[i * VN + v];
          [[unroll]] for (uint q = 0; q < 4; ++q) c = fma(vec4(a[i][q]), b[q * VN + v], c);
          acc4[i * VN + v] = c;
        }
    }
    for (; row < gend; ++row) { VKGMM_ADD_ROW(row) }  // the group's last rows (never another's)
    [[unroll]] for (uint i = 0; i < RK; ++i)
      [[unroll]] for (uint v = 0; v < VN; ++v)
        [[unroll]] for (uint c = 0; c < 4; ++c) acc[i * RN + v * 4 + c] = acc4[i * VN + v][c];
  } else {
    uint krow[RK], bcol[RN];
    [[unroll]] for (uint i = 0; i < RK; ++i) krow[i] = min(k0 + ty + i * TY, pc.k - 1);
    [[unroll]] for (uint j = 0; j < RN; ++j) bcol[j] = min(n0 + tx + j * TX, pc.n - 1);
    for (uint row = gstart; row < gend; ++row) {
      float a[RK], b[RN];
      [[unroll]] for (uint i = 0; i < RK; ++i) a[i] = load_lhs(lhs_index(krow[i], row));
      [[unroll]] for (uint j = 0; j < RN; ++j) b[j] = load_rhs(pc.rhs_off + row * pc.n + bcol[j]);
      [[unroll]] for (uint i = 0; i < RK; ++i)
        [[unroll]] for (uint j = 0; j < RN; ++j) acc[i * RN + j] = fma(a[i], b[j], acc[i * RN + j]);
    }
  }

  [[unroll]] for (uint i = 0; i < RK; ++i) {
    uint r = krow_of(ty, i);
    uint kk = k0 + r;
    if (r >= TK || kk >= pc.k) continue;
    if (VEC4_OUT && !OUT_NK) {
      // The invocation's columns in groups of 4 adjacent ones (col_of), each group in or out whole.
      [[unroll]] for (uint v = 0; v < RN / 4; ++v) {
        uint c = col_of(tx, 4 * v);
        uint col = n0 + c;
        if (c >= TN || col >= pc.n) continue;
        vec4 val;
        [[unroll]] for (uint q = 0; q < 4; ++q) val[q] = acc[i * RN + 4 * v + q];
        store_block4(j_group, kk, col, val);
      }
      continue;
    }
    [[unroll]] for (uint j = 0; j < RN; ++j) {
      uint c = col_of(tx, j);
      uint col = n0 + c;
      if (c >= TN || col >= pc.n) continue;
      store_element(j_group, OUT_NK ? col * pc.k + kk : kk * pc.n + col, acc[i * RN + j]);
    }
  }
}

void main() {
  if (!PERSISTENT) {
    run_block(gl_WorkGroupID.z, gl_WorkGroupID.y, gl_WorkGroupID.x);
    return;
  }
  // Work item w: n block fastest, then k block, then item (the host keeps their product < 2^32).
  const uint tiles_n = (pc.n + TN - 1u) / TN, tiles_k = (pc.k + TK - 1u) / TK;
  for (uint w = gl_WorkGroupID.x; w < pc.num_items * tiles_k * tiles_n; w += gl_NumWorkGroups.x)
    run_block(w / (tiles_k * tiles_n), (w / tiles_n) % tiles_k, w % tiles_n);
}
