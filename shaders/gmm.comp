#version 450
// gmm: out[m, n], each active group's rows of lhs[m, k] times its rhs[g] ([k, n], or [n, k] transposed).
//
// The grid is (n tiles) x (visits), or with PERSISTENT a fixed number of workgroups looping over those
// (visit, n tile) work items. A visit is a (group, first row) pair from the host's metadata
// (make_gmm_visits): TM rows from the group's first row on, storing only rows of that group. Visits with
// group -1 fill the rows outside the active groups with existing_out or zero, so every output element is
// written exactly once by one dispatch.
//
// Two schedules from this one source (specialization constant USE_SHARED):
//  - shared: the workgroup stages [TM, TK] of lhs and [TK, TN] of rhs in shared memory per K step
//    (the classic GPU schedule);
//  - direct: each invocation reads its operands straight from the buffers into a register micro-tile
//    (faster where shared memory and barriers cost as much as memory, e.g. on lavapipe).
// Both accumulate in fp32 registers: each invocation owns RM x RN outputs, rows ty + i*TY and columns
// tx + j*TX of the tile, so neighbouring invocations touch neighbouring columns; in groups of 4 adjacent
// rows and columns instead where 4-wide vectors carry them (row_of, col_of).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "bindings.glsl"
#include "dtype.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;  // TX * TY invocations
layout(constant_id = VKGMM_ID_BLOCK_ROWS) const uint TM = 64;
layout(constant_id = VKGMM_ID_STEP) const uint TK = 16;
layout(constant_id = VKGMM_ID_BLOCK_COLS) const uint TN = 64;
layout(constant_id = VKGMM_ID_TX) const uint TX = 16;
layout(constant_id = VKGMM_ID_TY) const uint TY = 16;
layout(constant_id = VKGMM_ID_ROWS_PER_INV) const uint RM = 4;  // ceil(TM / TY)
layout(constant_id = VKGMM_ID_COLS_PER_INV) const uint RN = 4;  // ceil(TN / TX)
layout(constant_id = VKGMM_ID_LHS_TYPE) const uint LHS_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_RHS_TYPE) const uint RHS_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_OUT_TYPE) const uint OUT_TYPE = DT_F32;
layout(constant_id = VKGMM_ID_GMM_TRANSPOSE_RHS) const bool TRANSPOSE_RHS = false;
layout(constant_id = VKGMM_ID_USE_SHARED) const bool USE_SHARED = true;
layout(constant_id = VKGMM_ID_HAS_EXISTING) const bool HAS_EXISTING = false;
layout(constant_id = VKGMM_ID_SHARED_A) const uint SHARED_A = 1;  // TM * TK when USE_SHARED, else 1
layout(constant_id = VKGMM_ID_SHARED_B) const uint SHARED_B = 1;  // TK * TN * NH when USE_SHARED, else 1
// 4-element loads (k, n unless rhs is transposed, and the operands' offsets multiples of 4): lhs is read
// as vec4 along K; rhs as vec4 along N, or along K when transposed. Direct schedule: each invocation owns
// RN/4 groups of 4 adjacent columns, lanes side by side, and reuse per load is 4x the scalar direct
// schedule's. Shared schedule: the staging loads, 4 elements each either way (one load with VEC4).
layout(constant_id = VKGMM_ID_VEC4) const bool VEC4 = false;
// The persistent grid (interface.h): main() loops over the work items instead of running one.
layout(constant_id = VKGMM_ID_PERSISTENT) const bool PERSISTENT = false;
// Routing by expert ids and the fused epilogue (interface.h, VKGMM_GMM_PUSH): rows gathered and scattered
// through the row map, weighted, biased, and a gated activation over [gate | up] product columns. GATED, every
// invocation holds its RN output columns twice, NH = 2 halves of accumulators: the gate's and the up
// projection's (product columns c and out_n + c), so both meet in one invocation's registers at the store.
layout(constant_id = VKGMM_ID_GMM_ROUTED) const bool ROUTED = false;
layout(constant_id = VKGMM_ID_GMM_WEIGHTED) const bool WEIGHTED = false;
layout(constant_id = VKGMM_ID_GMM_BIAS) const bool BIAS = false;
layout(constant_id = VKGMM_ID_GMM_ACTIVATION) const uint ACTIVATION = VKGMM_ACT_NONE;
const bool GATED = ACTIVATION != VKGMM_ACT_NONE;
// Small combined calls (interface.h): rows' results to the workspace, the last workgroup of an n tile sums them.
layout(constant_id = VKGMM_ID_GMM_FUSED_COMBINE) const bool FUSED_COMBINE = false;
// Rows stored 4 adjacent columns at a time (interface.h): only where every group of 4 columns starts at
// an element index that is a multiple of 4 in out (out_n and out's offset; the host checks both) and in
// the per-slot results (the workspace keeps them 4-word aligned).
layout(constant_id = VKGMM_ID_GMM_VEC4_OUT) const bool VEC4_OUT = false;
// The direct schedule's K slices (interface.h): invocation lid is (tx, ty) of slice lid / (TX * TY).
layout(constant_id = VKGMM_ID_GMM_K_SLICES) const uint K_SLICES = 1;
const uint NH = GATED ? 2u : 1u;
const uint RNH = RN * NH;  // accumulator columns per row: half h, column j at h * RN + j

// Offsets are in elements of each operand's type, relative to where its descriptor is bound.
layout(push_constant) uniform Params { VKGMM_GMM_PUSH(VKGMM_PUSH_FIELD) } pc;

VKGMM_DEFINE_INPUT_LOADS(load_lhs, load4_lhs, lhs, LHS_TYPE)
VKGMM_DEFINE_INPUT_LOADS(load_rhs_elements, load4_rhs_elements, rhs, RHS_TYPE)

#include "quant.glsl"
// rhs of an element type, or of a block format dequantized where it is read (RHS_TYPE folds the branch).
const bool RHS_BLOCKS = RHS_TYPE >= VKGMM_DT_Q8_0;
// Block formats: i counts values from rhs_off, which for them counts words (quant.glsl's q_word adds it).
float load_rhs(uint i) {
  return RHS_BLOCKS ? dequant4(RHS_TYPE, (i - pc.rhs_off) & ~3u)[(i - pc.rhs_off) & 3u] : load_rhs_elements(i);
}
vec4 load4_rhs(uint i) { return RHS_BLOCKS ? dequant4(RHS_TYPE, i - pc.rhs_off) : load4_rhs_elements(i); }
VKGMM_DEFINE_LOAD(load_ex, ex, OUT_TYPE)

// The shared schedule's stage, K-major so that an invocation's 4 adjacent rows (columns) are one 16-byte
// read: As[kk][row] and Bs[kk][product column] (the tile's product columns half by half). Lanes read
// consecutive vec4s of Bs and at most TY distinct vec4s of As per K step.
shared vec4 As4[(SHARED_A + 3) / 4];
shared vec4 Bs4[(SHARED_B + 3) / 4];

layout(std430, set = 0, binding = VKGMM_BINDING_BIAS) readonly buffer BiasBuf { float bias[]; };

// FUSED_COMBINE: the workspace (the META binding) written too: per-slot results and the tiles' counters,
// read by other workgroups (coherent).
layout(std430, set = 0, binding = VKGMM_BINDING_META) coherent buffer WorkBuf { uint work[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META) coherent readonly buffer WorkBuf4 { uvec4 work4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_META) coherent writeonly buffer WorkBuf4w { uvec4 work4w[]; };
#define VKGMM_PARTIAL_WORD(i) work[pc.partial_off + (i)]
#define VKGMM_PARTIAL_WORD4(i) work4[pc.partial_off / 4u + (i)]
#include "combine.glsl"

// Row orow's value at column col: out, or with FUSED_COMBINE the row's fp32 result in the workspace.
void store_row_value(uint orow, uint col, float v) {
  if (FUSED_COMBINE) work[pc.partial_off + orow * pc.out_n + col] = floatBitsToUint(v);
  else store_out(pc.out_off + orow * pc.out_n + col, v, OUT_TYPE);
}

// Columns col .. col + 3 of row orow (col a multiple of 4, with VEC4_OUT).
void store_row_values4(uint orow, uint col, vec4 v) {
  if (FUSED_COMBINE) work4w[(pc.partial_off + orow * pc.out_n + col) >> 2] = floatBitsToUint(v);
  else store4_out(pc.out_off + orow * pc.out_n + col, v, OUT_TYPE);
}

// Row r's slot (routed) or r itself: where its output goes.
uint slot_of_row(uint r) { return ROUTED ? uint(meta[pc.map_off + r]) : r; }
// Row r's lhs row: the slot's token (lhs [T, k]) or the slot itself (lhs per slot).
uint lhs_row(uint r) { return ROUTED ? uint(meta[pc.map_off + r]) / pc.lhs_div : r; }

// Element index of rhs[g][kk][col] (or rhs[g][col][kk] transposed), g relative to group_offset.
uint rhs_index(uint g_local, uint kk, uint col) {
  uint base = pc.rhs_off + g_local * pc.k * pc.n;
  return TRANSPOSE_RHS ? base + col * pc.k + kk : base + kk * pc.n + col;
}

// The product column of output column `col` in half h (GATED: 0 gate, 1 up).
uint product_col(uint h, uint col) { return h * pc.out_n + col; }

// Column of the tile's j-th column owned by invocation tx: lanes side by side, either one column each
// (stride TX) or, with VEC4 or the shared schedule, four adjacent columns each (groups of 4 at stride
// 4 * TX).
uint col_of(uint tx, uint j) {
  if (VEC4 || USE_SHARED) return ((j >> 2) * TX + tx) * 4u + (j & 3u);
  return tx + j * TX;
}
// Row of the tile's i-th row owned by invocation ty: likewise, groups of 4 adjacent rows in the shared
// schedule (RM a multiple of 4 there).
uint row_of(uint ty, uint i) {
  if (USE_SHARED) return ((i >> 2) * TY + ty) * 4u + (i & 3u);
  return ty + i * TY;
}

// ----- the shared schedule's staging: chunks of 4 elements along each operand's contiguous axis ----------
// lhs [TM, TK] as TK/4 x TM chunks along K, chunk e of row e % TM; rhs [TK, TN * NH] as TK x TN*NH/4
// chunks along N, or transposed (rhs [n, k]) as TK/4 x TN*NH chunks along K, chunk e of product column
// e % (TN * NH). A chunk along K is stored as 4 K rows: neighbouring lanes take neighbouring rows
// (columns), so those stores hit consecutive banks with no padding. Invocation lid takes chunks
// lid + s * NT: their sources and their places in the stage stay the same from one K step to the next,
// so both are computed once (a_src / b_src: the chunk's first element at K step 0; a_dst / b_dst) and a
// step only adds its K offset, the same for the whole workgroup. The next step's chunks are loaded into
// registers (a_next, b_next) while the current one is computed from shared memory.
//
// No bounds check runs in the main loop: rows past m read row m - 1 and columns past n the tile's first
// column instead (in bounds; their products are never stored), and the K steps end at k: the first step
// is the ragged one, starting before K = 0 (its values there are zero), so every later step lies in K.
const uint NT = TX * TY * K_SLICES;  // the workgroup's invocations
const uint TNH = TN * NH;  // the tile's product columns
const uint A_CHUNKS = TM * TK / 4, B_CHUNKS = TK * TNH / 4;
const uint CA = (A_CHUNKS + NT - 1) / NT, CB = (B_CHUNKS + NT - 1) / NT;
// Every invocation has all its chunks (no check) when the invocations divide them.
const bool A_EVEN = A_CHUNKS % NT == 0, B_EVEN = B_CHUNKS % NT == 0;
uint a_src[CA], b_src[CB];
uint a_dst[CA], b_dst[CB];  // the chunk's (first) vec4 in As4 / Bs4, and its component when stored as K rows
bvec4 b_cols[CB];           // rhs [k, n] without VEC4: which of the chunk's 4 columns are in the problem
// The chunks in flight, as loaded (dtype.glsl's staged chunks: 16-bit ones packed until stage_store).
const bool A_PACKED = VEC4 && LHS_TYPE != DT_F32;
const bool B_PACKED = VEC4 && !RHS_BLOCKS && RHS_TYPE != DT_F32;
uvec4 a_next[CA], b_next[CB];

// With VEC4 a chunk's 4 elements are all in range or all out (k, n multiples of 4): one load.
VKGMM_DEFINE_MASKED_LOAD4(lhs4_masked, load_lhs, load4_lhs, VEC4)
VKGMM_DEFINE_MASKED_LOAD4(rhs4_masked, load_rhs, load4_rhs, VEC4)
VKGMM_DEFINE_PACKED16_LOAD4(lhs4_packed, lhs)
VKGMM_DEFINE_PACKED16_LOAD4(rhs4_packed, rhs)
VKGMM_DEFINE_STAGED_LOAD4(lhs4_staged, lhs4_masked, lhs4_packed, A_PACKED)
VKGMM_DEFINE_STAGED_LOAD4(rhs4_staged, rhs4_masked, rhs4_packed, B_PACKED)

// The chunk's K offset within a step (chunks along K: a multiple of 4; rhs [k, n]: its K row).
uint a_koff(uint e) { return (e / TM) * 4u; }
uint b_koff(uint e) { return TRANSPOSE_RHS ? (e / TNH) * 4u : e / (TNH / 4); }

// Where invocation lid's chunks come from and go, for the tile at (m0, n0) of group g_local. Where the
// invocations divide a K step's chunks of one row (column), all of an invocation's chunks share its first
// chunk's row (column) and lie a constant number of K rows after it: one address, constant offsets.
void stage_sources(uint lid, uint m0, uint n0, uint g_local) {
  [[unroll]] for (uint s = 0; s < CA; ++s) {
    uint e = lid + s * NT, r = e % TM;
    if (s > 0 && NT % TM == 0) {
      a_src[s] = a_src[0] + s * (NT / TM) * 4u;
      a_dst[s] = a_dst[0] + s * NT;
      continue;
    }
    uint row = min(m0 + r, pc.m - 1u);  // m0 comes from the visit list: clamped, whatever it holds
    a_src[s] = pc.lhs_off + lhs_row(row) * pc.k + a_koff(e);
    a_dst[s] = a_koff(e) * (TM / 4) + r / 4u;  // component r & 3 of 4 K rows, TM / 4 vec4s apart
  }
  // The chunks of one K row (rhs [k, n]) or one product column (rhs [n, k]).
  const uint B_RUN = TRANSPOSE_RHS ? TNH : TNH / 4;
  [[unroll]] for (uint s = 0; s < CB; ++s) {
    uint e = lid + s * NT;
    uint j = TRANSPOSE_RHS ? e % TNH : (e % (TNH / 4)) * 4u;  // the chunk's (first) product column
    uint col = n0 + j % TN;
    b_cols[s] = run_in(col, pc.out_n);
    if (s > 0 && NT % B_RUN == 0) {
      b_src[s] = b_src[0] + (b_koff(e) - b_koff(lid)) * (TRANSPOSE_RHS ? 1u : pc.n);
      b_dst[s] = b_dst[0] + s * NT;
      continue;
    }
    b_src[s] = rhs_index(g_local, b_koff(e), product_col(j / TN, col < pc.out_n ? col : n0));
    b_dst[s] = TRANSPOSE_RHS ? b_koff(e) * (TNH / 4) + j / 4u : e;
  }
}

// Load the chunks of the K step at k0 into a_next / b_next. The first step (`first`, a constant where
// it is called) may start before K = 0: its values there are zero, never read; every other step lies in K.
void stage_load(int k0, const bool first) {
  [[unroll]] for (uint s = 0; s < CA; ++s) {
    uint e = gl_LocalInvocationIndex + s * NT;
    if (!A_EVEN && e >= A_CHUNKS) continue;
    bvec4 ok = first ? greaterThanEqual(ivec4(k0 + int(a_koff(e))) + ivec4(0, 1, 2, 3), ivec4(0)) : bvec4(true);
    a_next[s] = lhs4_staged(a_src[s] + uint(k0), ok);
  }
  [[unroll]] for (uint s = 0; s < CB; ++s) {
    uint e = gl_LocalInvocationIndex + s * NT;
    if (!B_EVEN && e >= B_CHUNKS) continue;
    if (TRANSPOSE_RHS) {
      bvec4 ok = first ? greaterThanEqual(ivec4(k0 + int(b_koff(e))) + ivec4(0, 1, 2, 3), ivec4(0)) : bvec4(true);
      b_next[s] = rhs4_staged(b_src[s] + uint(k0), ok);
    } else {
      bvec4 cols = VEC4 ? bvec4(true) : b_cols[s];
      b_next[s] = rhs4_staged(b_src[s] + uint(k0) * pc.n, first && k0 + int(b_koff(e)) < 0 ? bvec4(false) : cols);
    }
  }
}

// Store a_next / b_next into the stage: lhs chunks transposed (4 K rows), rhs chunks along N whole.
void stage_store() {
  [[unroll]] for (uint s = 0; s < CA; ++s) {
    if (!A_EVEN && gl_LocalInvocationIndex + s * NT >= A_CHUNKS) continue;
    // The row's component r & 3 (stage_sources): chunk e's e & 3 is (e % TM) & 3, TM a multiple of 4
    // (NT need not be one: 12 invocations happen).
    uint c = (gl_LocalInvocationIndex + s * NT) & 3u;
    vec4 v = staged_values(a_next[s], A_PACKED, LHS_TYPE);
    [[unroll]] for (uint q = 0; q < 4; ++q) As4[a_dst[s] + q * (TM / 4)][c] = v[q];
  }
  [[unroll]] for (uint s = 0; s < CB; ++s) {
    uint e = gl_LocalInvocationIndex + s * NT;
    if (!B_EVEN && e >= B_CHUNKS) continue;
    vec4 v = staged_values(b_next[s], B_PACKED, RHS_TYPE);
    if (TRANSPOSE_RHS) {
      [[unroll]] for (uint q = 0; q < 4; ++q) Bs4[b_dst[s] + q * (TNH / 4)][e & 3u] = v[q];
    } else {
      Bs4[b_dst[s]] = v;  // K row e / (TNH / 4), columns from (e % (TNH / 4)) * 4
    }
  }
}

// A fill visit: fill_rows rows from m0 on (TM of them at a time per K slice), within its stretch of inactive rows (below the first active
// group's first row when it starts there, else up to m), so no row is written by two visits (on the
// packed 16-bit path a second read-modify-write of a half-word could race with the first). Returns how
// many rows it wrote. With FUSED_COMBINE the rows are slots of no local expert: 0 (the combine adds
// existing_out once per token).
uint fill_rows(uint m0, uint n0, uint tx, uint ty, uint slice) {
  uint active_begin = uint(meta[pc.group_offset]);
  uint end = m0 < active_begin ? active_begin : pc.m;
  for (uint s = slice * TM; s < pc.fill_rows; s += K_SLICES * TM) {
    [[unroll]] for (uint i = 0; i < RM; ++i) {
      uint r = row_of(ty, i);
      uint row = m0 + s + r;
      if (r >= TM || row >= end) continue;
      uint orow = slot_of_row(row);
      [[unroll]] for (uint j = 0; j < RN; ++j) {
        uint c = col_of(tx, j);
        uint col = n0 + c;
        if (c >= TN || col >= pc.out_n) continue;
        uint idx = orow * pc.out_n + col;
        store_row_value(orow, col, HAS_EXISTING && !FUSED_COMBINE ? load_ex(pc.ex_off + idx) : 0.0);
      }
    }
  }
  return m0 < end ? min(m0 + pc.fill_rows, end) - m0 : 0u;
}

// FUSED_COMBINE, after a work item stored `rows` rows of n tile n_tile: the tile's counter takes them,
// and the workgroup that brings it to m (every row stored: the tile's other workgroups are done) sums
// the tile's columns for every token. Uniform control flow: the arguments are the workgroup's.
shared bool tile_complete;
void finish_tile(uint n_tile, uint rows) {
  // This workgroup's stores visible before its count says they are done.
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) tile_complete = atomicAdd(work[pc.tile_count_off + n_tile], rows) + rows == pc.m;
  barrier();
  if (!tile_complete) return;
  memoryBarrierBuffer();
  const uint n0 = n_tile * TN, tokens = pc.m / pc.top_k;
  if (TN % 4u == 0u && (pc.out_n & 3u) == 0u) {
    // 4 adjacent columns per invocation (TN and n0 are multiples of 4 wherever out_n is; the per-slot
    // results start at a multiple of 4 words, host/dispatch_plan.cpp).
    for (uint e = gl_LocalInvocationIndex; e < tokens * (TN / 4u); e += NT) {
      uint col = n0 + (e % (TN / 4u)) * 4u;
      if (col < pc.out_n) combine_element4(e / (TN / 4u), col, pc.top_k, pc.out_n, VEC4_OUT);
    }
    return;
  }
  for (uint e = gl_LocalInvocationIndex; e < tokens * TN; e += NT) {
    uint col = n0 + e % TN;
    if (col < pc.out_n) combine_element(e / TN, col, pc.top_k, pc.out_n);
  }
}

float silu(float x) { return x / (1.0 + exp(-x)); }
float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
// gelu's tanh form, tanh written through exp (tanh(y) = 1 - 2 / (exp(2y) + 1): exact at both ends, where
// some drivers' tanh of a large argument is NaN).
float gelu_tanh(float x) {
  float y = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (2.0 - 2.0 / (exp(2.0 * y) + 1.0));
}

// The gated activation (ACTIVATION, folded) of a gate value and an up value (include/vkgmm/ops.hpp).
float gated_value(float gate, float up) {
  if (ACTIVATION == VKGMM_ACT_SWIGLU) return silu(gate) * up;
  if (ACTIVATION == VKGMM_ACT_SWIGLU_OAI) {
    float g = min(gate, 7.0), u = clamp(up, -7.0, 7.0);
    return (u + 1.0) * g * sigmoid(1.702 * g);
  }
  return gelu_tanh(gate) * up;  // VKGMM_ACT_GEGLU
}

// The epilogue of one output value: the gate (or only) product v, the up product u (GATED), of group
// g_local at output column col, its row's routing weight w: + bias, activation, weight; all in fp32
// (v itself with none of them: the constants fold every step away).
float epilogue(float v, float u, uint g_local, uint col, float w) {
  if (BIAS) {
    uint brow = pc.bias_off + g_local * pc.n;
    v += bias[brow + product_col(0u, col)];
    if (GATED) u += bias[brow + product_col(1u, col)];
  }
  if (GATED) v = gated_value(v, u);
  if (WEIGHTED) v *= w;
  return v;
}

// One work item: n tile n_tile of visit `visit` (the workgroup's whole job on the per-visit grid). Its
// barriers stay in uniform control flow: both arguments are the same for the whole workgroup.
void run_visit(uint visit, uint n_tile) {
  if (visit >= pc.num_visits) return;
  int group = meta[pc.visits_off + visit];
  // Visit lists built on the device are padded to the plan's bound with VKGMM_NO_VISIT entries.
  if (group < VKGMM_FILL_VISIT) return;
  uint m0 = uint(meta[pc.visits_off + pc.num_visits + visit]);
  uint n0 = n_tile * TN;  // the tile's first output column
  uint lid = gl_LocalInvocationIndex;
  // With K slices, neighbouring lanes take neighbouring K steps where rhs runs along K ([n, k]: a column's
  // K run is contiguous, so a subgroup's lanes read one run, as a GEMV's would), else neighbouring columns
  // (rhs [k, n]: a K row is contiguous). Without slices both are the same.
  const bool SLICE_FASTEST = TRANSPOSE_RHS && K_SLICES > 1u;
  uint w = SLICE_FASTEST ? lid / K_SLICES : lid % (TX * TY);  // the lane's place in its slice
  uint slice = SLICE_FASTEST ? lid % K_SLICES : lid / (TX * TY);
  uint tx = w % TX, ty = w / TX;

  if (group == VKGMM_FILL_VISIT) {
    uint rows = fill_rows(m0, n0, tx, ty, slice);
    if (FUSED_COMBINE) finish_tile(n_tile, rows);
    return;
  }
  uint gstart = uint(meta[group]), gend = uint(meta[group + 1]);
  uint g_local = uint(group) - pc.group_offset;

  float acc[RM * RNH];
  [[unroll]] for (uint e = 0; e < RM * RNH; ++e) acc[e] = 0.0;
  // The vec4 schedules' accumulators: column group v (4 adjacent columns, half v / VN) of row i at
  // acc4[i * VNH + v]; copied into acc (half h, column j at h * RN + j) before the store.
  const uint VN = (RN + 3) / 4;  // RN is a multiple of 4 there; never 0, even where those branches are dead
  const uint VNH = VN * NH;
  vec4 acc4[RM * VNH];
  [[unroll]] for (uint e = 0; e < RM * VNH; ++e) acc4[e] = vec4(0.0);

  if (USE_SHARED) {
    stage_sources(lid, m0, n0, g_local);
    // ceil(k / TK) steps ending at k, the first one ragged (see the staging above).
    const uint steps = (pc.k + TK - 1) / TK;
    int k0 = int(pc.k) - int(steps * TK);
    if (steps > 0) stage_load(k0, true);
    for (; k0 < int(pc.k); k0 += int(TK)) {
      stage_store();
      barrier();
      if (k0 + int(TK) < int(pc.k)) stage_load(k0 + int(TK), false);  // in flight while this step computes
      [[unroll]] for (uint kk = 0; kk < TK; ++kk) {
        vec4 a[(RM + 3) / 4], b[VNH];  // RM is a multiple of 4 here; never 0 where this branch is dead
        [[unroll]] for (uint u = 0; u < RM / 4; ++u) a[u] = As4[kk * (TM / 4) + u * TY + ty];
        [[unroll]] for (uint v = 0; v < VNH; ++v) b[v] = Bs4[kk * (TNH / 4) + (v / VN) * (TN / 4) + (v % VN) * TX + tx];
        [[unroll]] for (uint i = 0; i < RM; ++i)
          [[unroll]] for (uint v = 0; v < VNH; ++v) acc4[i * VNH + v] = fma(vec4(a[i / 4][i % 4]), b[v], acc4[i * VNH + v]);
      }
      barrier();
    }
  } else if (VEC4) {
    uint arow[RM];
    [[unroll]] for (uint i = 0; i < RM; ++i) arow[i] = pc.lhs_off + lhs_row(min(m0 + ty + i * TY, pc.m - 1)) * pc.k;
    uint rbase = pc.rhs_off + g_local * pc.k * pc.n;
    // Each invocation owns RN/4 groups of 4 adjacent columns (col_of). Per 4 K steps it takes the 4 K
    // rows of a batch of those column groups (VB below) as b[q * VB + w] (q: the K step), then each
    // accumulator of the batch takes its four FMAs in a row: a CPU driver keeps few accumulators in
    // registers, so touch each one once per four K steps. rhs [k, n] gives those rows as vec4s along N
    // directly. rhs [n, k] gives vec4s along K, one per column: 4 of them are the 4 x 4 block transposed,
    // which costs nothing where vectors are held component by component (a CPU driver's SoA registers).
    uint bcol[VNH];      // rhs [k, n]: the group's first column (clamped so the vec4 stays in the row)
    uint bcol_t[4 * VNH];  // rhs [n, k]: each column's K run (columns past n clamped; never stored)
    [[unroll]] for (uint v = 0; v < VNH; ++v) {
      uint col = product_col(v / VN, n0 + col_of(tx, (v % VN) * 4u));
      bcol[v] = min(col, pc.n - 4u);
      [[unroll]] for (uint c = 0; c < 4; ++c) bcol_t[4 * v + c] = rbase + min(col + c, pc.n - 1) * pc.k;
    }
    // Block-format rhs [n, k] (blocks along K): K is walked a step (quant.glsl: 32 values, q4_K 64) at a
    // time, and each column's step (its scales, its quant words) is read once per step into registers and
    // decoded 4 values at a time from there; q4_K's super-block head (d, dmin, the packed scales) is read
    // once per 256 values and kept. The walk sums the products of lhs with the unscaled values in part
    // over each run of one scale, which then scales the run's sum once per accumulator (q4_K's mins come
    // off as min * the row's sum of lhs over the run), except q4_K at 16 rows per invocation (prefill's
    // 32 x 128 tiles), which scales each value as it decodes it: its runs cost 2 * 16 * 16 FMAs and
    // 16 * 32 adds per run of 8 quads beside a second set of accumulators, where scaling each value costs
    // 16 * 32 FMAs. Measured on lavapipe against the unquantized peer: scaling each value is faster for
    // q4_K at 16 rows; runs are faster at 2 rows (decode) for q4_0 and q4_K, and q8_0 at 16 rows keeps runs
    // (even by CPU time, slower per value scaled by gpu ms).
    const bool WALK_STEPS = RHS_BLOCKS && TRANSPOSE_RHS;
    // Not a specialization-constant expression (glslang emitted one whose id spirv-val found undefined
    // where the loops below use it); folded all the same once the constants are specialized.
    const bool values_scaled = q_values_scaled(RHS_TYPE, RM);
    const bool WALK_RUNS = WALK_STEPS && !values_scaled;
    const bool WALK_MINS = WALK_RUNS && RHS_TYPE == VKGMM_DT_Q4_K;
    const uint kstep = WALK_STEPS ? q_step_values(RHS_TYPE) : 4u;
    const uint run_quads = q_run_quads(RHS_TYPE);
    // Column groups per batch of rhs loads (b below): one, its 4 x 4 block loaded right before the FMAs
    // of every row that use it, so 16 values are live at a time instead of the quad's 16 * VNH, which a
    // CPU driver spills; measured on lavapipe it is faster than loading every group first on the gmm
    // presets and the block-format decodes. Every group first stays where that measured better: q4_K
    // scaling each value as it decodes it (16 rows per invocation), and rhs [n, k] of an element type,
    // whose loads are 4 * VNH separate K runs in memory, all in flight together that way.
    // Block formats stored [k, n] take one group at a time too, unmeasured (the presets store [n, k]).
    const uint VB = (WALK_STEPS && values_scaled) || (TRANSPOSE_RHS && !WALK_STEPS) ? VNH : 1u;
    uvec4 qhead[4 * VNH];
    // K slices take every K_SLICES-th step, whole steps (a block format's steps lie in whole blocks).
    for (uint k0 = slice * kstep; k0 < pc.k; k0 += K_SLICES * kstep) {
      QStep qs[4 * VNH];
      uint qw[4 * VNH][8], qh[4 * VNH][8];
      // q4_K's head once per super-block of 256 values; a slice's steps are K_SLICES steps apart, so with
      // more than one slice each step may be in a super-block of its own.
      if (WALK_STEPS && RHS_TYPE == VKGMM_DT_Q4_K && (K_SLICES > 1u || k0 % 256u == 0u))
        [[unroll]] for (uint e = 0; e < 4 * VNH; ++e) qhead[e] = q4k_head(bcol_t[e] - pc.rhs_off + k0);
      if (WALK_STEPS)
        [[unroll]] for (uint e = 0; e < 4 * VNH; ++e)
          q_step_walk(RHS_TYPE, bcol_t[e] - pc.rhs_off + k0, qhead[e], qs[e], qw[e], qh[e]);
      vec4 part[RM * VNH];
      float xsum[RM];
      // One quad of K (the body below), in a loop of two shapes. q4_K's 64-value steps where each value is
      // scaled as it is decoded (16 rows per invocation) run their 16 quads as a loop: unrolled, a step
      // (16 x 16 x 16 FMAs and the decoding) is machine code far beyond a CPU's instruction cache; looped,
      // q4_K prefill took ~12 % less CPU time on lavapipe (alternated against bf16 in one process, 5 rounds
      // each). q8_0's 8-quad steps took 4-8 % more looped, and the other loads (one quad per K step) were
      // 1.7x slower: they stay unrolled, as do the per-run sums, whose run boundaries fold away unrolled.
      // qh is q6_K's, whose steps are 8 quads (its index wraps only in formats that never read it).
#define VKGMM_WALK_QUAD(s) \
  { \
    uint kk = k0 + 4 * s; \
    vec4 a[RM]; \
    [[unroll]] for (uint i = 0; i < RM; ++i) a[i] = load4_lhs(arow[i] + kk); \
    const bool run_starts = WALK_RUNS && s % run_quads == 0u; \
    if (WALK_MINS) \
      [[unroll]] for (uint i = 0; i < RM; ++i) xsum[i] = (run_starts ? 0.0 : xsum[i]) + ((a[i].x + a[i].y) + (a[i].z + a[i].w)); \
    [[unroll]] for (uint v0 = 0; v0 < VNH; v0 += VB) { \
      vec4 b[4 * VNH]; /* 4 * VB used: VB is not a constant expression where glslang sizes arrays */ \
      [[unroll]] for (uint w = 0; w < VB; ++w) { \
        uint v = v0 + w; \
        if (TRANSPOSE_RHS) { \
          [[unroll]] for (uint c = 0; c < 4; ++c) { \
            uint e = 4 * v + c; \
            uint word = qw[e][s % q_run_words(RHS_TYPE)], hi_word = qh[e][s % 8u]; \
            vec4 t = WALK_RUNS    ? q_raw4(RHS_TYPE, qs[e], word, hi_word, s) \
                     : WALK_STEPS ? q_step4(RHS_TYPE, qs[e], word, hi_word, s) \
                                  : load4_rhs(bcol_t[e] + kk); \
            [[unroll]] for (uint q = 0; q < 4; ++q) b[q * VB + w][c] = t[q]; \
          } \
        } else { \
          [[unroll]] for (uint q = 0; q < 4; ++q) b[q * VB + w] = load4_rhs(rbase + (kk + q) * pc.n + bcol[v]); \
        } \
      } \
      [[unroll]] for (uint i = 0; i < RM; ++i) \
        [[unroll]] for (uint w = 0; w < VB; ++w) { \
          uint v = v0 + w; \
          vec4 c = WALK_RUNS ? (run_starts ? vec4(0.0) : part[i * VNH + v]) : acc4[i * VNH + v]; \
          [[unroll]] for (uint q = 0; q < 4; ++q) c = fma(vec4(a[i][q]), b[q * VB + w], c); \
          if (WALK_RUNS) part[i * VNH + v] = c; \
          else acc4[i * VNH + v] = c; \
        } \
    } \
    if (WALK_RUNS && s % run_quads == run_quads - 1u) \
      [[unroll]] for (uint v = 0; v < VNH; ++v) { \
        uint e = 4 * v; \
        vec4 scale = vec4(q_run_scale(RHS_TYPE, qs[e], s), q_run_scale(RHS_TYPE, qs[e + 1], s), \
                          q_run_scale(RHS_TYPE, qs[e + 2], s), q_run_scale(RHS_TYPE, qs[e + 3], s)); \
        vec4 mins = vec4(q_run_min(RHS_TYPE, qs[e], s), q_run_min(RHS_TYPE, qs[e + 1], s), \
                         q_run_min(RHS_TYPE, qs[e + 2], s), q_run_min(RHS_TYPE, qs[e + 3], s)); \
        [[unroll]] for (uint i = 0; i < RM; ++i) { \
          vec4 c = fma(scale, part[i * VNH + v], acc4[i * VNH + v]); \
          acc4[i * VNH + v] = WALK_MINS ? fma(-mins, vec4(xsum[i]), c) : c; \
        } \
      } \
  }
      if (WALK_STEPS && !WALK_RUNS && kstep > 32u) {
        [[dont_unroll]] for (uint s = 0; s < kstep / 4; ++s) VKGMM_WALK_QUAD(s)
      } else {
        [[unroll]] for (uint s = 0; s < kstep / 4; ++s) VKGMM_WALK_QUAD(s)
      }
#undef VKGMM_WALK_QUAD
    }
  } else {
    // Clamped addresses keep every read in bounds; the rows and columns they duplicate are never stored.
    uint arow[RM], bcol[RNH];
    [[unroll]] for (uint i = 0; i < RM; ++i) arow[i] = pc.lhs_off + lhs_row(min(m0 + ty + i * TY, pc.m - 1)) * pc.k;
    [[unroll]] for (uint j = 0; j < RNH; ++j) bcol[j] = min(product_col(j / RN, n0 + tx + (j % RN) * TX), pc.n - 1);
    for (uint kk = slice; kk < pc.k; kk += K_SLICES) {
      float a[RM], b[RNH];
      [[unroll]] for (uint i = 0; i < RM; ++i) a[i] = load_lhs(arow[i] + kk);
      [[unroll]] for (uint j = 0; j < RNH; ++j) b[j] = load_rhs(rhs_index(g_local, kk, bcol[j]));
      [[unroll]] for (uint i = 0; i < RM; ++i)
        [[unroll]] for (uint j = 0; j < RNH; ++j) acc[i * RNH + j] = fma(a[i], b[j], acc[i * RNH + j]);
    }
  }

  // Column j of half h is acc4 group h * VN + j / 4 (RN = 4 * VN): the same layout, h * RN + j.
  if (USE_SHARED || VEC4)
    [[unroll]] for (uint i = 0; i < RM; ++i)
      [[unroll]] for (uint v = 0; v < VNH; ++v)
        [[unroll]] for (uint c = 0; c < 4; ++c) acc[i * RNH + v * 4 + c] = acc4[i * VNH + v][c];

  // K_SLICES > 1: the slices' accumulators summed into the first slice's, a tree over the slices (a power
  // of two) through As4, which the direct schedule does not stage in (SHARED_A floats: half the slices'
  // accumulators). A round's stores and loads are consecutive words across neighbouring lanes: indexed
  // by slice fastest where the lanes run over the slices (SLICE_FASTEST), else by lane w of the W in a
  // slice. In run_visit itself: glslang's copy of a spec-constant-sized array into a function's parameter
  // does not validate. Uniform control flow: the barriers are reached by every invocation.
  if (K_SLICES > 1u) {
    const uint E = RM * RNH, W = TX * TY;
    for (uint half_ = K_SLICES / 2u; half_ > 0u; half_ /= 2u) {
      barrier();
      if (slice >= half_ && slice < 2u * half_)
        [[unroll]] for (uint e = 0; e < E; ++e) {
          uint at = SLICE_FASTEST ? (e * W + w) * half_ + (slice - half_) : ((slice - half_) * E + e) * W + w;
          As4[at / 4u][at % 4u] = acc[e];
        }
      barrier();
      if (slice < half_)
        [[unroll]] for (uint e = 0; e < E; ++e) {
          uint at = SLICE_FASTEST ? (e * W + w) * half_ + slice : (slice * E + e) * W + w;
          acc[e] += As4[at / 4u][at % 4u];
        }
    }
  }

  // Store only this group's rows: the tile's other rows belong to other visits. With K slices, the
  // first slice holds the sums.
  if (slice == 0u)
  [[unroll]] for (uint i = 0; i < RM; ++i) {
    uint r = row_of(ty, i);
    uint row = m0 + r;
    if (r >= TM || row < gstart || row >= gend) continue;
    uint orow = slot_of_row(row);
    // Read once per row: the compiler cannot keep a buffer value across the stores to out (they may alias).
    const float weight = WEIGHTED ? intBitsToFloat(meta[pc.weight_off + row]) : 1.0;
    if (VEC4_OUT) {
      // The invocation's columns in groups of 4 adjacent ones (col_of), each group in or out whole.
      [[unroll]] for (uint v = 0; v < RN / 4; ++v) {
        uint c = col_of(tx, 4 * v);
        uint col = n0 + c;
        if (c >= TN || col >= pc.out_n) continue;
        vec4 val;
        [[unroll]] for (uint q = 0; q < 4; ++q) {
          uint j = 4 * v + q;
          val[q] = epilogue(acc[i * RNH + j], acc[i * RNH + (NH - 1u) * RN + j], g_local, col + q, weight);
        }
        store_row_values4(orow, col, val);
      }
      continue;
    }
    [[unroll]] for (uint j = 0; j < RN; ++j) {
      uint c = col_of(tx, j);
      uint col = n0 + c;
      if (c >= TN || col >= pc.out_n) continue;
      store_row_value(orow, col, epilogue(acc[i * RNH + j], acc[i * RNH + (NH - 1u) * RN + j], g_local, col, weight));
    }
  }
  // The visit's rows: from its first row (a group's first row, or tm rows past one) to the group's end.
  if (FUSED_COMBINE) finish_tile(n_tile, m0 < gend ? min(m0 + TM, gend) - m0 : 0u);
}

void main() {
  if (!PERSISTENT) {
    // Visits past 65535 are folded into the z dimension of the grid.
    run_visit(gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y, gl_WorkGroupID.x);
    return;
  }
  // Work item w is n tile w % tiles_n of visit w / tiles_n (the host keeps visits * tiles_n < 2^32). A list
  // built on the device holds its real visits first and their count: never more than its slots are read.
  const uint tiles_n = (pc.out_n + TN - 1u) / TN;
  const uint visits = pc.visit_count_off == 0u ? pc.num_visits : min(uint(meta[pc.visit_count_off]), pc.num_visits);
  for (uint w = gl_WorkGroupID.x; w < visits * tiles_n; w += gl_NumWorkGroups.x) run_visit(w / tiles_n, w % tiles_n);
}
