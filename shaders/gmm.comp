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
#extension GL_KHR_shader_subgroup_basic : require
#ifdef VKGMM_SUBGROUP_SLICES
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#ifdef VKGMM_MATRIX
#include "coopmat.glsl"
#endif

#include "bindings.glsl"
#include "dtype.glsl"

layout(local_size_x_id = VKGMM_ID_INVOCATIONS) in;  // TX * TY invocations
#include "invocation.glsl"
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
// The stage's lengths (stage.glsl), 1 when unused: TM * TK and TK * TN * HALVES on FMAs; the matrix builds'
// line-major stage pads each line (and B holds a block format's two parts).
layout(constant_id = VKGMM_ID_SHARED_A) const uint SHARED_A = 1;
layout(constant_id = VKGMM_ID_SHARED_B) const uint SHARED_B = 1;
// 4-element loads (k, n unless rhs is transposed, and the operands' offsets multiples of 4): lhs is read
// as vec4 along K; rhs as vec4 along N, or along K when transposed. Direct schedule: each invocation owns
// RN/4 groups of 4 adjacent columns, lanes side by side, and reuse per load is 4x the scalar direct
// schedule's. Shared schedule: the staging loads, 4 elements each either way (one load with VEC4).
layout(constant_id = VKGMM_ID_VEC4) const bool VEC4 = false;
// The persistent grid (interface.h): main() loops over the work items instead of running one.
layout(constant_id = VKGMM_ID_PERSISTENT) const bool PERSISTENT = false;
// Routing by expert ids and the fused epilogue (interface.h, VKGMM_GMM_PUSH): rows gathered and scattered
// through the row map, weighted, biased, and a gated activation over [gate | up] product columns. GATED, every
// invocation holds its RN output columns twice, HALVES = 2 halves of accumulators: the gate's and the up
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
// Routed: each slot's pre-activation saved in the workspace too (interface.h).
layout(constant_id = VKGMM_ID_GMM_SAVE_PRE) const bool SAVE_PRE = false;
// The direct schedule's steps of its K walk per iteration (interface.h); k is a multiple of the
// iteration's values.
layout(constant_id = VKGMM_ID_GMM_STEPS_IN_FLIGHT) const uint STEPS_IN_FLIGHT = 1;
// A combined call of few slots routed in the kernel (interface.h): the ids at the route bindings, no row map.
layout(constant_id = VKGMM_ID_GMM_ROUTE_IN_KERNEL) const bool ROUTE_IN_KERNEL = false;
// Group sizes on the device read in the kernel (interface.h): the sizes at the route-reads binding, no visit list.
layout(constant_id = VKGMM_ID_GMM_SIZES_IN_KERNEL) const bool SIZES_IN_KERNEL = false;
const uint HALVES = GATED ? 2u : 1u;
const uint ACC_COLS = RN * HALVES;  // accumulator columns per row: half h, column j at h * RN + j

// Offsets are in elements of each operand's type, relative to where its descriptor is bound.
layout(push_constant) uniform Params { VKGMM_GMM_PUSH(VKGMM_PUSH_FIELD) } pc;

VKGMM_DEFINE_INPUT_LOADS(load_lhs, load4_lhs, lhs, LHS_TYPE)

// rhs of an element type, or in the VKGMM_BLOCK_RHS builds of a block format, dequantized where it is
// read. Two builds, not a branch on RHS_TYPE: drivers inline every call before they specialize, so
// decoding code in an element type's pipeline, dead as it is, would be inlined at each load and dropped
// again, which tripled the compile of those pipelines (RADV and lavapipe alike).
#include "quant.glsl"
#ifdef VKGMM_BLOCK_RHS
const bool RHS_BLOCKS = true;
// i counts values from rhs_off, which for blocks counts words (quant.glsl's q_word adds it).
float load_rhs(uint i) { return dequant4((i - pc.rhs_off) & ~3u)[(i - pc.rhs_off) & 3u]; }
vec4 load4_rhs(uint i) { return dequant4(i - pc.rhs_off); }
#else
const bool RHS_BLOCKS = false;
VKGMM_DEFINE_INPUT_LOADS(load_rhs, load4_rhs, rhs, RHS_TYPE)
#endif
VKGMM_DEFINE_LOAD(load_ex, ex, OUT_TYPE)

// The shared schedule's stage (stage.glsl); on FMAs K-major so that an invocation's 4 adjacent rows
// (columns) are one 16-byte read: As[kk][row] and Bs[kk][product column] (the tile's product columns half
// by half). Lanes read consecutive vec4s of Bs and at most TY distinct vec4s of As per K step.
#define STAGE_DEPTH TK
#define STAGE_SPLIT_B RHS_BLOCKS
#include "stage.glsl"

layout(std430, set = 0, binding = VKGMM_BINDING_BIAS) readonly buffer BiasBuf { float bias[]; };

// Routed: the workspace the kernel writes (interface.h), from its first word as the META binding's view:
// FUSED_COMBINE's per-slot results and tile counters, read by other workgroups (coherent), and SAVE_PRE's
// pre-activations.
layout(std430, set = 0, binding = VKGMM_BINDING_ROUTE_WORKSPACE) coherent buffer WorkBuf { uint work[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_ROUTE_WORKSPACE) coherent readonly buffer WorkBuf4 { uvec4 work4[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_ROUTE_WORKSPACE) coherent writeonly buffer WorkBuf4w { uvec4 work4w[]; };
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

// The route bindings (interface.h): ROUTE_IN_KERNEL's router weights; the status word and what the kernel
// reads in place of a build's metadata (ROUTE_IN_KERNEL's ids, SIZES_IN_KERNEL's group sizes).
layout(std430, set = 0, binding = VKGMM_BINDING_ROUTE_WEIGHTS) readonly buffer RouteWeightsBuf { float route_weights[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_ROUTE_STATUS) writeonly buffer RouteStatusBuf { uint route_status[]; };
layout(std430, set = 0, binding = VKGMM_BINDING_ROUTE_READS) readonly buffer RouteReadsBuf { int route_reads[]; };

// Row r's slot (routed: through the row map, or in the kernel the row is the slot) or r itself: where its
// output goes.
uint slot_of_row(uint r) { return ROUTED && !ROUTE_IN_KERNEL ? uint(meta[pc.map_off + r]) : r; }
// Row r's lhs row: the slot's token (lhs [T, k]) or the slot itself (lhs per slot).
uint lhs_row(uint r) { return ROUTED ? slot_of_row(r) / pc.lhs_div : r; }

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

// The accumulators of the invocation's RM rows by ACC_COLS product columns: acc (half h, column j at
// h * RN + j) for the scalar direct schedule and the store; the vec4 schedules' acc4 (column group v, 4
// adjacent columns of half v / VN, of row i at i * ACC4_COLS + v), copied into acc before the store. Module
// scope, so that each schedule's reduction is a function of its own (gmm_shared.glsl, gmm_direct.glsl).
const uint VN = (RN + 3) / 4;  // RN is a multiple of 4 there; never 0, even where those schedules are dead
const uint ACC4_COLS = VN * HALVES;
float acc[RM * ACC_COLS];
vec4 acc4[RM * ACC4_COLS];

#include "activation.glsl"

// The epilogue of one output value: the gate (or only) product v, the up product u (GATED), of group
// g_local at output column col, its row's routing weight w: + bias, activation, weight; all in fp32
// (v itself with none of them: the constants fold every step away).
// SAVE_PRE: the slot's product + bias goes to the workspace first (the same sums epilogue() takes).
float epilogue(float v, float u, uint g_local, uint col, float w, uint orow) {
  if (BIAS) {
    uint brow = pc.bias_off + g_local * pc.n;
    v += bias[brow + product_col(0u, col)];
    if (GATED) u += bias[brow + product_col(1u, col)];
  }
  if (SAVE_PRE) {
    uint at = pc.pre_off + orow * pc.n;
    work[at + product_col(0u, col)] = floatBitsToUint(v);
    if (GATED) work[at + product_col(1u, col)] = floatBitsToUint(u);
  }
  if (GATED) v = gated_value(v, u);
  if (WEIGHTED) v *= w;
  return v;
}

// Columns col .. col + 3 of output row orow from the products v (the gate's, or the only ones) and u (the up
// projection's, GATED) of group g_local: the epilogue of each, stored 4 at a time with VEC4_OUT, else the
// columns below out_n one by one.
void store_chunk(uint orow, uint col, float weight, vec4 v, vec4 u, uint g_local) {
  if (VEC4_OUT) {
    vec4 val;
    [[unroll]] for (uint q = 0; q < 4; ++q) val[q] = epilogue(v[q], u[q], g_local, col + q, weight, orow);
    store_row_values4(orow, col, val);
    return;
  }
  // Past out_n nothing runs: epilogue() reads the bias and writes the saved pre-activation there.
  [[unroll]] for (uint q = 0; q < 4; ++q)
    if (col + q < pc.out_n) store_row_value(orow, col + q, epilogue(v[q], u[q], g_local, col + q, weight, orow));
}
#ifdef VKGMM_MATRIX
#include "gmm_matrix.glsl"
#endif

#include "gmm_shared.glsl"
#include "gmm_direct.glsl"


// A fill visit: fill_rows rows from m0 on (TM of them at a time per K slice), within its stretch of inactive rows (below the first active
// group's first row when it starts there, else up to m), so no row is written by two visits (on the
// packed 16-bit path a second read-modify-write of a half-word could race with the first). Returns how
// many rows it wrote. With FUSED_COMBINE the rows are slots of no local expert: 0 (the combine adds
// existing_out once per token).
uint fill_rows(uint m0, uint active_begin, uint n0, uint tx, uint ty, uint slice) {
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
// the tile's columns for every token. Uniform control flow: the arguments are the workgroup's. The
// handoff is the fence-then-count pattern of the GLSL450 memory model (a device-scope buffer fence before
// the barrier and the count, coherent bindings read after it); the matrix builds, whose modules take the
// Vulkan memory model (where it would need release and acquire semantics on the count itself), never fuse
// the combine: only the direct schedule does (host/gmm_plan.cpp).
// 16 bytes (.x the flag), as every other shared variable of the matrix builds: in whatever order a driver
// places them, the cooperative matrices' arrays then start 16-byte aligned, as their loads and stores need
// (VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986).
shared uvec4 tile_complete;
void finish_tile(uint n_tile, uint rows) {
  // This workgroup's stores visible before its count says they are done.
  memoryBarrierBuffer();
  barrier();
  if (local_index() == 0u) tile_complete.x = uint(atomicAdd(work[pc.tile_count_off + n_tile], rows) + rows == pc.m);
  barrier();
  if (tile_complete.x == 0u) return;
  memoryBarrierBuffer();
  const uint n0 = n_tile * TN, tokens = pc.m / pc.top_k;
  if (TN % 4u == 0u && (pc.out_n & 3u) == 0u) {
    // 4 adjacent columns per invocation (TN and n0 are multiples of 4 wherever out_n is; the per-slot
    // results start at a multiple of 4 words, host/plan_core_routing.cpp).
    for (uint e = local_index(); e < tokens * (TN / 4u); e += NT) {
      uint col = n0 + (e % (TN / 4u)) * 4u;
      if (col < pc.out_n) combine_element4(e / (TN / 4u), col, pc.top_k, pc.out_n, VEC4_OUT);
    }
    return;
  }
  for (uint e = local_index(); e < tokens * TN; e += NT) {
    uint col = n0 + e % TN;
    if (col < pc.out_n) combine_element(e / TN, col, pc.top_k, pc.out_n);
  }
}


#include "gmm_reduce.glsl"

#include "route_ids.glsl"

// ROUTE_IN_KERNEL (interface.h). Slot s's local expert's group (group_offset is 0 when routed), or
// VKGMM_NO_VISIT for any other id, which the slot then skips as the routing build's order puts it past
// every expert's rows. The status word comes from write_route_status.
int route_group(uint s) {
  uint flagged = 0u;
  const uint e = route_local_expert(route_reads[pc.ids_off + s], flagged);
  return e < pc.route_experts ? int(e) : VKGMM_NO_VISIT;
}

// ROUTE_IN_KERNEL: the status word from every slot's id, by one workgroup. 16 bytes, as tile_complete.
shared uvec4 route_flags;
void write_route_status() {
  if (local_index() == 0u) route_flags.x = 0u;
  barrier();
  for (uint s = local_index(); s < pc.m; s += NT)
    if (route_id_bad(route_reads[pc.ids_off + s])) atomicOr(route_flags.x, VKGMM_STATUS_BAD_ID);
  barrier();
  if (local_index() == 0u) route_status[pc.status_off] = route_flags.x;
}

#include "group_sizes.glsl"

// SIZES_IN_KERNEL: the work item's group (VKGMM_FILL_VISIT for the fill items) and rows, and the active
// groups' first row, which run_visit takes instead of the visit list's.
int item_group;
uint item_gstart, item_gend, item_active_begin;

// SIZES_IN_KERNEL: global group g's size as the app wrote it.
int group_size(uint g) { return route_reads[pc.ids_off + g]; }

// SIZES_IN_KERNEL: `run` (the first row of global group `from`) plus the taken sizes of groups from..to-1
// by the build's rule (group_sizes.glsl): the first row of group `to`, the sizes' flags added to bad. A
// clamped sum is the same in any grouping of its terms, so a sum may go on from an earlier one.
uint group_rows_sum(uint from, uint to, uint run, inout uint bad) {
  for (uint g = from; g < to; ++g) run = group_sizes_add(run, group_size_taken(group_size(g), pc.m, bad), pc.m, bad);
  return run;
}

// SIZES_IN_KERNEL: the status word from every size, by one workgroup's invocation 0.
void write_sizes_status() {
  uint bad = 0u;
  if (local_index() == 0u) {
    group_rows_sum(0u, pc.num_groups, 0u, bad);
    route_status[pc.status_off] = bad;
  }
}

// ROUTE_IN_KERNEL: the sums of a token's weighted slot results at the invocation's columns (a visit's
// store adds its slot's to them; VEC4_OUT is off), which the invocations holding the tile's row 0 (the
// slot's own: the tile's other rows read clamped rows and are never stored) store as the combine stores
// its sums.
float route_sums[RN];

// One work item: n tile n_tile of visit `visit` (the workgroup's whole job on the per-visit grid), or with
// ROUTE_IN_KERNEL of slot `visit`, a visit of one row: the slot, of its expert, or with SIZES_IN_KERNEL
// the visit from row `visit` of the work item's group (item_group). Its barriers stay in uniform control
// flow: both arguments (and so a slot's id) are the same for the whole workgroup.
void run_visit(uint visit, uint n_tile) {
  const bool listed = !ROUTE_IN_KERNEL && !SIZES_IN_KERNEL;
  if (listed && visit >= pc.num_visits) return;
  int group = ROUTE_IN_KERNEL ? route_group(visit) : SIZES_IN_KERNEL ? item_group : meta[pc.visits_off + visit];
  // Visit lists built on the device are padded to the plan's bound with VKGMM_NO_VISIT entries.
  if (group < VKGMM_FILL_VISIT) return;
  uint m0 = listed ? uint(meta[pc.visits_off + pc.num_visits + visit]) : visit;
  uint n0 = n_tile * TN;  // the tile's first output column
  uint lid = tile_index();
  uint w = lane_in_slice(lid), slice = slice_of_lane(lid);
  uint tx = w % TX, ty = w / TX;

  if (group == VKGMM_FILL_VISIT) {
    uint rows = fill_rows(m0, SIZES_IN_KERNEL ? item_active_begin : uint(meta[pc.group_offset]), n0, tx, ty, slice);
    if (FUSED_COMBINE) finish_tile(n_tile, rows);
    return;
  }
  uint gstart = ROUTE_IN_KERNEL ? visit : SIZES_IN_KERNEL ? item_gstart : uint(meta[group]);
  uint gend = ROUTE_IN_KERNEL ? visit + 1u : SIZES_IN_KERNEL ? item_gend : uint(meta[group + 1]);
  uint g_local = uint(group) - pc.group_offset;
#ifdef VKGMM_MATRIX
  matrix_zero();
  reduce_shared(lid, m0, n0, g_local, tx, ty);
  matrix_finish();
  matrix_store_visit(m0, n0, gstart, gend, g_local);
  if (FUSED_COMBINE) finish_tile(n_tile, m0 < gend ? min(m0 + TM, gend) - m0 : 0u);
  return;
#endif

  reduce_item(m0, n0, g_local, tx, ty, slice, w);

  // Store only this group's rows: the tile's other rows belong to other visits. With K slices, the
  // first slice holds the sums.
  if (slice == 0u)
  [[unroll]] for (uint i = 0; i < RM; ++i) {
    uint r = row_of(ty, i);
    uint row = m0 + r;
    if (r >= TM || row < gstart || row >= gend) continue;
    uint orow = slot_of_row(row);
    // Read once per row: the compiler cannot keep a buffer value across the stores to out (they may alias).
    const float weight = ROUTE_IN_KERNEL ? route_weights[pc.route_weights_off + row]
                         : WEIGHTED      ? intBitsToFloat(meta[pc.weight_off + row])
                                         : 1.0;
    if (VEC4_OUT) {
      // The invocation's columns in groups of 4 adjacent ones (col_of), each group in or out whole.
      [[unroll]] for (uint v = 0; v < RN / 4; ++v) {
        uint c = col_of(tx, 4 * v);
        uint col = n0 + c;
        if (c >= TN || col >= pc.out_n) continue;
        vec4 gate, up;
        [[unroll]] for (uint q = 0; q < 4; ++q) {
          gate[q] = acc[i * ACC_COLS + 4 * v + q];
          up[q] = acc[i * ACC_COLS + (HALVES - 1u) * RN + 4 * v + q];
        }
        store_chunk(orow, col, weight, gate, up, g_local);
      }
      continue;
    }
    [[unroll]] for (uint j = 0; j < RN; ++j) {
      uint c = col_of(tx, j);
      uint col = n0 + c;
      if (c >= TN || col >= pc.out_n) continue;
      const float up = acc[i * ACC_COLS + (HALVES - 1u) * RN + j];
      const float value = epilogue(acc[i * ACC_COLS + j], up, g_local, col, weight, orow);
      if (ROUTE_IN_KERNEL) {
        // The token's sum (route_sums): rounded before it is added, as the combine's per-slot results are.
        precise float sum = route_sums[j] + value;
        route_sums[j] = sum;
      } else {
        store_row_value(orow, col, value);
      }
    }
  }
  // The visit's rows: from its first row (a group's first row, or tm rows past one) to the group's end.
  if (FUSED_COMBINE) finish_tile(n_tile, m0 < gend ? min(m0 + TM, gend) - m0 : 0u);
}

void main() {
  // Visits (ROUTE_IN_KERNEL: tokens) past 65535 are folded into the z dimension of the grid.
  const uint item = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (!PERSISTENT && !ROUTE_IN_KERNEL && !SIZES_IN_KERNEL) {
    run_visit(item, gl_WorkGroupID.x);
    return;
  }
  // The persistent grid's loop, or with ROUTE_IN_KERNEL token `item`'s slots in slot order at n tile x,
  // or with SIZES_IN_KERNEL work item `item`'s rows (the loop holds the reduction's second call: drivers
  // inline every call, so a third would compile the whole reduction again).
  // Persistent, work item w is n tile w % tiles_n of visit w / tiles_n (the host keeps visits * tiles_n <
  // 2^32). A list built on the device holds its real visits first and their count: never more than its
  // slots are read.
  const uint tiles_n = (pc.out_n + TN - 1u) / TN;
  uint first = gl_WorkGroupID.x, end = 0u, step = gl_NumWorkGroups.x;
  // With ROUTE_IN_KERNEL: whether `item` is a token (the grid's z folding may give one past the last).
  const bool token = ROUTE_IN_KERNEL && item < pc.m / pc.top_k;
  if (SIZES_IN_KERNEL) {
    // Local group `item`'s rows, TM at a time, or a stretch of rows outside the active groups' (item
    // num_local: below them, num_local + 1: above them), fill_rows at a time; items past those (z's
    // folding) have none.
    if (pc.status_off != VKGMM_NO_STATUS && gl_WorkGroupID.x == 0u && item == 0u) write_sizes_status();
    const uint GL = pc.route_experts, go = pc.group_offset;
    // Each sum goes on from the one before it: the window's first row, then its groups' rows (one loop
    // each, as host/gmm_plan.cpp's loop budget counts them).
    uint bad = 0u;
    item_active_begin = group_rows_sum(0u, go, 0u, bad);
    if (item < GL) {
      item_group = int(go + item);
      item_gstart = item == 0u ? item_active_begin : group_rows_sum(go, go + item, item_active_begin, bad);
      item_gend = group_sizes_add(item_gstart, group_size_taken(group_size(go + item), pc.m, bad), pc.m, bad);
      first = item_gstart;
      end = item_gend;
      step = TM;
    } else {
      item_group = VKGMM_FILL_VISIT;
      first = item == GL ? 0u : item == GL + 1u ? group_rows_sum(go, go + GL, item_active_begin, bad) : pc.m;
      end = item == GL ? item_active_begin : pc.m;
      step = pc.fill_rows;
    }
  } else if (ROUTE_IN_KERNEL) {
    if (pc.status_off != VKGMM_NO_STATUS && gl_WorkGroupID.x == 0u && item == 0u) write_route_status();
    [[unroll]] for (uint c = 0; c < RN; ++c) route_sums[c] = 0.0;
    first = token ? item * pc.top_k : 0u;
    end = token ? first + pc.top_k : 0u;
    step = 1u;
  } else {
    const uint visits = pc.visit_count_off == 0u ? pc.num_visits : min(uint(meta[pc.visit_count_off]), pc.num_visits);
    end = visits * tiles_n;
  }
  const bool walks = ROUTE_IN_KERNEL || SIZES_IN_KERNEL;
  for (uint w = first; w < end; w += step) run_visit(walks ? w : w / tiles_n, walks ? gl_WorkGroupID.x : w % tiles_n);
  if (!token) return;
  const uint lid = tile_index(), w = lane_in_slice(lid), n0 = gl_WorkGroupID.x * TN;
  if (slice_of_lane(lid) == 0u && w / TX == 0u)
    [[unroll]] for (uint c = 0; c < RN; ++c) {
      uint col = n0 + col_of(w % TX, c);
      if (col_of(w % TX, c) < TN && col < pc.out_n) combine_store(item, col, pc.out_n, route_sums[c]);
    }
}
