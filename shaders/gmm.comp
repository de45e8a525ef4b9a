#version 450
// gmm: out[m, n], each active group's rows of lhs[m, k] times its rhs[g] ([k, n], or [n, k] transposed).
//
// The grid is (n tiles) x (visits). A visit is a (group, first row) pair from the host's metadata
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
// tx + j*TX of the tile, so neighbouring invocations touch neighbouring columns.
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
layout(constant_id = VKGMM_ID_SHARED_B) const uint SHARED_B = 1;  // TK * TN when USE_SHARED, else 1
// Direct schedule with 4-element loads (k, n unless rhs is transposed, and the operands' offsets
// multiples of 4): lhs is read as vec4 along K; rhs as vec4 along N (each invocation owns RN/4 groups of
// 4 adjacent columns, lanes side by side), or along K when transposed. Reuse per load is 4x the scalar
// direct schedule's.
layout(constant_id = VKGMM_ID_VEC4) const bool VEC4 = false;

// Offsets are in elements of each operand's type, relative to where its descriptor is bound.
layout(push_constant) uniform Params { VKGMM_GMM_PUSH(VKGMM_PUSH_FIELD) } pc;

VKGMM_DEFINE_INPUT_LOADS(load_lhs, load4_lhs, lhs, LHS_TYPE)
VKGMM_DEFINE_INPUT_LOADS(load_rhs, load4_rhs, rhs, RHS_TYPE)
VKGMM_DEFINE_LOAD(load_ex, ex, OUT_TYPE)

shared float As[SHARED_A];
shared float Bs[SHARED_B];

// Element index of rhs[g][kk][col] (or rhs[g][col][kk] transposed), g relative to group_offset.
uint rhs_index(uint g_local, uint kk, uint col) {
  uint base = pc.rhs_off + g_local * pc.k * pc.n;
  return TRANSPOSE_RHS ? base + col * pc.k + kk : base + kk * pc.n + col;
}

// Column of the tile's j-th column owned by invocation tx: lanes side by side, either one column each
// (stride TX) or, with VEC4, four adjacent columns each (groups of 4 at stride 4 * TX).
uint col_of(uint tx, uint j) {
  if (VEC4) return ((j >> 2) * TX + tx) * 4u + (j & 3u);
  return tx + j * TX;
}

// A fill visit: fill_rows rows from m0 on, within its stretch of inactive rows (below the first active
// group's first row when it starts there, else up to m), so no row is written by two visits (on the
// packed 16-bit path a second read-modify-write of a half-word could race with the first).
void fill_rows(uint m0, uint n0, uint tx, uint ty) {
  uint active_begin = uint(meta[pc.group_offset]);
  uint end = m0 < active_begin ? active_begin : pc.m;
  for (uint s = 0; s < pc.fill_rows; s += TM) {
    [[unroll]] for (uint i = 0; i < RM; ++i) {
      uint r = ty + i * TY;
      uint row = m0 + s + r;
      if (r >= TM || row >= end) continue;
      [[unroll]] for (uint j = 0; j < RN; ++j) {
        uint c = col_of(tx, j);
        uint col = n0 + c;
        if (c >= TN || col >= pc.n) continue;
        uint idx = row * pc.n + col;
        store_out(pc.out_off + idx, HAS_EXISTING ? load_ex(pc.ex_off + idx) : 0.0, OUT_TYPE);
      }
    }
  }
}

void main() {
  // Visits past 65535 are folded into the z dimension of the grid.
  uint visit = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (visit >= pc.num_visits) return;
  int group = meta[pc.visits_off + visit];
  // Visit lists built on the device are padded to the plan's bound with VKGMM_NO_VISIT entries.
  if (group < VKGMM_FILL_VISIT) return;
  uint m0 = uint(meta[pc.visits_off + pc.num_visits + visit]);
  uint n0 = gl_WorkGroupID.x * TN;
  uint lid = gl_LocalInvocationIndex;
  uint tx = lid % TX, ty = lid / TX;

  if (group == VKGMM_FILL_VISIT) {
    fill_rows(m0, n0, tx, ty);
    return;
  }
  uint gstart = uint(meta[group]), gend = uint(meta[group + 1]);
  uint g_local = uint(group) - pc.group_offset;

  float acc[RM * RN];
  [[unroll]] for (uint e = 0; e < RM * RN; ++e) acc[e] = 0.0;

  if (VEC4) {
    uint arow[RM];
    [[unroll]] for (uint i = 0; i < RM; ++i) arow[i] = pc.lhs_off + min(m0 + ty + i * TY, pc.m - 1) * pc.k;
    uint rbase = pc.rhs_off + g_local * pc.k * pc.n;
    // Each invocation owns RN/4 groups of 4 adjacent columns (col_of). Per 4 K steps it gathers the 4
    // K rows of those columns as b[q * VN + v] (q: the K step), then each accumulator takes its four
    // FMAs in a row: a CPU driver keeps few accumulators in registers, so touch each one once per four
    // K steps. rhs [k, n] gives those rows as vec4s along N directly. rhs [n, k] gives vec4s along K,
    // one per column: 4 of them are the 4 x 4 block transposed, which costs nothing where vectors are
    // held component by component (a CPU driver's SoA registers).
    const uint VN = (RN + 3) / 4;  // RN is a multiple of 4 here; never 0, even where this branch is dead
    vec4 acc4[RM * VN];
    [[unroll]] for (uint e = 0; e < RM * VN; ++e) acc4[e] = vec4(0.0);
    uint bcol[VN];      // rhs [k, n]: the group's first column (clamped so the vec4 stays in the row)
    uint bcol_t[4 * VN];  // rhs [n, k]: each column's K run (columns past n clamped; never stored)
    [[unroll]] for (uint v = 0; v < VN; ++v) {
      bcol[v] = min(n0 + col_of(tx, v * 4u), pc.n - 4u);
      [[unroll]] for (uint c = 0; c < 4; ++c)
        bcol_t[4 * v + c] = rbase + min(n0 + col_of(tx, v * 4u) + c, pc.n - 1) * pc.k;
    }
    for (uint kk = 0; kk < pc.k; kk += 4) {
      vec4 a[RM];
      [[unroll]] for (uint i = 0; i < RM; ++i) a[i] = load4_lhs(arow[i] + kk);
      vec4 b[4 * VN];
      if (TRANSPOSE_RHS) {
        [[unroll]] for (uint v = 0; v < VN; ++v)
          [[unroll]] for (uint c = 0; c < 4; ++c) {
            vec4 t = load4_rhs(bcol_t[4 * v + c] + kk);
            [[unroll]] for (uint q = 0; q < 4; ++q) b[q * VN + v][c] = t[q];
          }
      } else {
        [[unroll]] for (uint q = 0; q < 4; ++q)
          [[unroll]] for (uint v = 0; v < VN; ++v) b[q * VN + v] = load4_rhs(rbase + (kk + q) * pc.n + bcol[v]);
      }
      [[unroll]] for (uint i = 0; i < RM; ++i)
        [[unroll]] for (uint v = 0; v < VN; ++v) {
          vec4 c = acc4[i * VN + v];
          [[unroll]] for (uint q = 0; q < 4; ++q) c = fma(vec4(a[i][q]), b[q * VN + v], c);
          acc4[i * VN + v] = c;
        }
    }
    [[unroll]] for (uint i = 0; i < RM; ++i)
      [[unroll]] for (uint v = 0; v < VN; ++v)
        [[unroll]] for (uint c = 0; c < 4; ++c) acc[i * RN + v * 4 + c] = acc4[i * VN + v][c];
  } else if (USE_SHARED) {
    for (uint k0 = 0; k0 < pc.k; k0 += TK) {
      // Stage lhs[m0 : m0+TM, k0 : k0+TK] and rhs[k0 : k0+TK, n0 : n0+TN]; zeros past the edges.
      for (uint e = lid; e < TM * TK; e += TX * TY) {
        uint r = e / TK, c = e % TK;
        uint row = m0 + r, kk = k0 + c;
        As[e] = (row < pc.m && kk < pc.k) ? load_lhs(pc.lhs_off + row * pc.k + kk) : 0.0;
      }
      for (uint e = lid; e < TK * TN; e += TX * TY) {
        // Walk memory order: along n normally, along k when rhs is transposed.
        uint c = TRANSPOSE_RHS ? e % TK : e / TN;
        uint j = TRANSPOSE_RHS ? e / TK : e % TN;
        uint kk = k0 + c, col = n0 + j;
        Bs[c * TN + j] = (kk < pc.k && col < pc.n) ? load_rhs(rhs_index(g_local, kk, col)) : 0.0;
      }
      barrier();
      for (uint kk = 0; kk < TK; ++kk) {
        float a[RM], b[RN];
        [[unroll]] for (uint i = 0; i < RM; ++i) {
          uint r = min(ty + i * TY, TM - 1);
          a[i] = As[r * TK + kk];
        }
        [[unroll]] for (uint j = 0; j < RN; ++j) {
          uint c = min(tx + j * TX, TN - 1);
          b[j] = Bs[kk * TN + c];
        }
        [[unroll]] for (uint i = 0; i < RM; ++i)
          [[unroll]] for (uint j = 0; j < RN; ++j) acc[i * RN + j] = fma(a[i], b[j], acc[i * RN + j]);
      }
      barrier();
    }
  } else {
    // Clamped addresses keep every read in bounds; the rows and columns they duplicate are never stored.
    uint arow[RM], bcol[RN];
    [[unroll]] for (uint i = 0; i < RM; ++i) arow[i] = pc.lhs_off + min(m0 + ty + i * TY, pc.m - 1) * pc.k;
    [[unroll]] for (uint j = 0; j < RN; ++j) bcol[j] = min(n0 + tx + j * TX, pc.n - 1);
    for (uint kk = 0; kk < pc.k; ++kk) {
      float a[RM], b[RN];
      [[unroll]] for (uint i = 0; i < RM; ++i) a[i] = load_lhs(arow[i] + kk);
      [[unroll]] for (uint j = 0; j < RN; ++j) b[j] = load_rhs(rhs_index(g_local, kk, bcol[j]));
      [[unroll]] for (uint i = 0; i < RM; ++i)
        [[unroll]] for (uint j = 0; j < RN; ++j) acc[i * RN + j] = fma(a[i], b[j], acc[i * RN + j]);
    }
  }

  // Store only this group's rows: the tile's other rows belong to other visits.
  [[unroll]] for (uint i = 0; i < RM; ++i) {
    uint r = ty + i * TY;
    uint row = m0 + r;
    if (r >= TM || row < gstart || row >= gend) continue;
    [[unroll]] for (uint j = 0; j < RN; ++j) {
      uint c = col_of(tx, j);
      uint col = n0 + c;
      if (c >= TN || col >= pc.n) continue;
      store_out(pc.out_off + row * pc.n + col, acc[i * RN + j], OUT_TYPE);
    }
  }
}
