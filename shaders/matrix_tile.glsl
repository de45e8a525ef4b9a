// An output block on cooperative matrices (the VKGMM_MATRIX builds; coopmat.glsl's types): the shared
// schedule's f16 stage of one step multiplied into f32 accumulators, and the block taken out through
// shared memory to the includer's epilogue. The includer defines, before including:
//   MT_ROWS, MT_COLS, MT_STEP: the block's rows and output columns and the step's depth (its constants);
//   MT_HALVES: product columns per output column (gmm's gated activation: 2, the gate's and the up
//     projection's, staged half after half);
// and includes stage.glsl first: its stage As16 [MT_ROWS][STAGE_STRIDE] (row-major A) and Bs16
// [MT_COLS * MT_HALVES][STAGE_STRIDE] (column-major B; stage_layout.h), with STAGE_SPLIT_B a block format's
// second parts from B_LO, scaled by B_LO_SCALE. Also:
//   void matrix_store4(uint r, uint c, vec4 v, vec4 u): the epilogue of block row r, output columns
//     c .. c + 3 (below MT_COLS; the includer checks the problem's bounds), v the products (the gate's)
//     and u the up projection's (MT_HALVES 2; else v again).
// The workgroup's subgroups tile the block SG_M x SG_N: subgroup s takes rows (s % SG_M) * WM .. + WM and,
// in each half, output columns (s / SG_M) * WN .. + WN, as FM x FN accumulators of CM_M x CM_N. The host
// sizes the block so that all of these divide (make_matrix_shape), and runs full subgroups of the
// device's size.
layout(constant_id = VKGMM_ID_MATRIX_M) const uint CM_M = 16;
layout(constant_id = VKGMM_ID_MATRIX_N) const uint CM_N = 16;
layout(constant_id = VKGMM_ID_MATRIX_K) const uint CM_K = 16;
layout(constant_id = VKGMM_ID_MATRIX_SG_M) const uint SG_M = 2;
layout(constant_id = VKGMM_ID_MATRIX_SG_N) const uint SG_N = 4;
const uint WM = MT_ROWS / SG_M, WN = MT_COLS / SG_N;
const uint FM = WM / CM_M, FN = WN / CM_N;
const uint FRAGMENT = CM_M * CM_N;
const uint FRAGMENTS = FM * FN * MT_HALVES;
// The places between the stage's lines (stage_layout.h).
const uint STAGE_STRIDE = VKGMM_STAGE_STRIDE(MT_STEP);
// Each subgroup's accumulators on their way to the epilogue: MT_HALVES at a time (a column block's gate and
// up products meet there).
shared float Cs[SG_M * SG_N * MT_HALVES * FRAGMENT];

// Accumulator fm * FN * MT_HALVES + h * FN + fn: rows fm * CM_M, columns fn * CM_N of half h, in the
// subgroup's part; a block format's second parts in accs_lo until matrix_finish.
VKGMM_CM_ACC accs[FRAGMENTS];
VKGMM_CM_ACC accs_lo[FRAGMENTS];

void matrix_zero() {
  [[unroll]] for (uint f = 0; f < FRAGMENTS; ++f) accs[f] = VKGMM_CM_ACC(0.0);
  if (STAGE_SPLIT_B) [[unroll]] for (uint f = 0; f < FRAGMENTS; ++f) accs_lo[f] = VKGMM_CM_ACC(0.0);
}

// The step's products from stage buffer `buf` into the accumulators.
void matrix_step(const uint buf) {
  const uint sg_m = subgroup_index() % SG_M, sg_n = subgroup_index() / SG_M;
  [[unroll]] for (uint kk = 0; kk < MT_STEP; kk += CM_K) {
    VKGMM_CM_A a[FM];
    VKGMM_CM_B b[FN * MT_HALVES];
    [[unroll]] for (uint fm = 0; fm < FM; ++fm)
      VKGMM_CM_LOAD_ROWS(a[fm], As16, buf * SHARED_A + vkgmm_stage_place(sg_m * WM + fm * CM_M, kk, MT_STEP),
                         STAGE_STRIDE);
    [[unroll]] for (uint part = 0; part < ((STAGE_SPLIT_B) ? 2u : 1u); ++part) {
      [[unroll]] for (uint h = 0; h < MT_HALVES; ++h)
        [[unroll]] for (uint fn = 0; fn < FN; ++fn)
          VKGMM_CM_LOAD_COLUMNS(b[h * FN + fn], Bs16,
                                buf * SHARED_B + part * B_LO +
                                    vkgmm_stage_place(h * MT_COLS + sg_n * WN + fn * CM_N, kk, MT_STEP),
                                STAGE_STRIDE);
      [[unroll]] for (uint fm = 0; fm < FM; ++fm)
        [[unroll]] for (uint j = 0; j < FN * MT_HALVES; ++j) {
          const uint f = fm * FN * MT_HALVES + j;
          if (part == 0u) accs[f] = VKGMM_CM_MUL_ADD(a[fm], b[j], accs[f]);
          else accs_lo[f] = VKGMM_CM_MUL_ADD(a[fm], b[j], accs_lo[f]);
        }
    }
  }
}

// After the last step: a block format's second parts added in.
void matrix_finish() {
  if (STAGE_SPLIT_B) [[unroll]] for (uint f = 0; f < FRAGMENTS; ++f) accs[f] = accs[f] + accs_lo[f] * (1.0 / B_LO_SCALE);
}

// The subgroup's accumulators to matrix_store4, one column block at a time (its halves) through Cs, each
// lane 4 adjacent columns of a row. The blocks are a loop (the epilogue once in the code), but each
// accumulator is named by a constant index, under a uniform branch per accumulator: indexed by the loop's
// counter, accs would become indexable memory, which NAK keeps in local memory and ANV in scratch for the
// whole kernel, main loop included.
void matrix_store() {
  const uint sg_m = subgroup_index() % SG_M, sg_n = subgroup_index() / SG_M;
  const uint base = subgroup_index() * MT_HALVES * FRAGMENT;
  for (uint block = 0; block < FM * FN; ++block) {
    const uint fm = block / FN, fn = block % FN;
    [[unroll]] for (uint f = 0; f < FM * FN; ++f)
      if (f == block)
        [[unroll]] for (uint h = 0; h < MT_HALVES; ++h)
          VKGMM_CM_STORE_ROWS(accs[(f / FN) * FN * MT_HALVES + h * FN + f % FN], Cs, base + h * FRAGMENT, CM_N);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = gl_SubgroupInvocationID; e < FRAGMENT / 4u; e += gl_SubgroupSize) {
      const uint r = e / (CM_N / 4u), c = (e % (CM_N / 4u)) * 4u;
      const uint at = base + r * CM_N + c, up_at = at + (MT_HALVES - 1u) * FRAGMENT;
      matrix_store4(sg_m * WM + fm * CM_M + r, sg_n * WN + fn * CM_N + c,
                    vec4(Cs[at], Cs[at + 1u], Cs[at + 2u], Cs[at + 3u]),
                    vec4(Cs[up_at], Cs[up_at + 1u], Cs[up_at + 2u], Cs[up_at + 3u]));
    }
    // Every lane's reads done before the next block overwrites Cs.
    subgroupBarrier();
  }
}
