// gmm's matrix-unit schedule (the VKGMM_MATRIX builds, included by gmm.comp): the shared schedule's
// staging (gmm_shared.glsl) into an f16 stage, the products on cooperative matrices, accumulated in f32.
// The workgroup's subgroups tile the block SG_M x SG_N: subgroup s takes rows (s % SG_M) * WM .. + WM and,
// in each half (GATED: the gate's and the up projection's product columns), output columns
// (s / SG_M) * WN .. + WN, as FM x FN accumulators of CM_M x CM_N. The host sizes the block so that all
// of these divide, and the workgroup is SG_M * SG_N subgroups of the device's size.
layout(constant_id = VKGMM_ID_GMM_MATRIX_M) const uint CM_M = 16;
layout(constant_id = VKGMM_ID_GMM_MATRIX_N) const uint CM_N = 16;
layout(constant_id = VKGMM_ID_GMM_MATRIX_K) const uint CM_K = 16;
layout(constant_id = VKGMM_ID_GMM_MATRIX_SG_M) const uint SG_M = 2;
layout(constant_id = VKGMM_ID_GMM_MATRIX_SG_N) const uint SG_N = 4;
const uint WM = TM / SG_M, WN = TN / SG_N;
const uint FM = WM / CM_M, FN = WN / CM_N;
const uint FRAGMENT = CM_M * CM_N;
// Each subgroup's accumulators on their way to the epilogue: NH of them at a time (a column block's gate
// and up products meet there).
shared float Cs[SG_M * SG_N * NH * FRAGMENT];

// Accumulator fm * FN * NH + h * FN + fn: rows fm * CM_M, columns fn * CM_N of half h, in the subgroup's part;
// a block format's second parts (gmm.comp's B_LO, scaled by B_LO_SCALE) in accs_lo until the end.
VKGMM_CM_ACC accs[FM * FN * NH];
VKGMM_CM_ACC accs_lo[FM * FN * NH];

void reduce_matrix(uint lid, uint m0, uint n0, uint g_local) {
  stage_sources(lid, m0, n0, g_local);
  const uint sg_m = gl_SubgroupID % SG_M, sg_n = gl_SubgroupID / SG_M;
  [[unroll]] for (uint f = 0; f < FM * FN * NH; ++f) accs[f] = VKGMM_CM_ACC(0.0);
  if (RHS_BLOCKS) [[unroll]] for (uint f = 0; f < FM * FN * NH; ++f) accs_lo[f] = VKGMM_CM_ACC(0.0);
  // ceil(k / TK) steps ending at k, the first one ragged, as the shared schedule's.
  const uint steps = (pc.k + TK - 1) / TK;
  int k0 = int(pc.k) - int(steps * TK);
  if (steps > 0) stage_load(k0, true);
  for (; k0 < int(pc.k); k0 += int(TK)) {
    stage_store();
    barrier();
    if (k0 + int(TK) < int(pc.k)) stage_load(k0 + int(TK), false);  // in flight while this step computes
    [[unroll]] for (uint kk = 0; kk < TK; kk += CM_K) {
      // As is [K][TM] (column-major A), Bs [K][TN * NH] (row-major B).
      VKGMM_CM_A a[FM];
      VKGMM_CM_B b[FN * NH];
      [[unroll]] for (uint fm = 0; fm < FM; ++fm)
        VKGMM_CM_LOAD_COLUMNS(a[fm], As16, kk * TM + sg_m * WM + fm * CM_M, TM);
      // A block format's two parts (gmm.comp's B_LO) one after the other.
      [[unroll]] for (uint part = 0; part < (RHS_BLOCKS ? 2u : 1u); ++part) {
        [[unroll]] for (uint h = 0; h < NH; ++h)
          [[unroll]] for (uint fn = 0; fn < FN; ++fn)
            VKGMM_CM_LOAD_ROWS(b[h * FN + fn], Bs16, part * B_LO + kk * TN * NH + h * TN + sg_n * WN + fn * CM_N,
                               TN * NH);
        [[unroll]] for (uint fm = 0; fm < FM; ++fm)
          [[unroll]] for (uint j = 0; j < FN * NH; ++j) {
            const uint f = fm * FN * NH + j;
            if (part == 0u) accs[f] = VKGMM_CM_MUL_ADD(a[fm], b[j], accs[f]);
            else accs_lo[f] = VKGMM_CM_MUL_ADD(a[fm], b[j], accs_lo[f]);
          }
      }
    }
    barrier();
  }
  if (RHS_BLOCKS)
    [[unroll]] for (uint f = 0; f < FM * FN * NH; ++f) accs[f] = accs[f] + accs_lo[f] * (1.0 / B_LO_SCALE);
}

// The subgroup's accumulators through the epilogue to the output: one column block at a time (its gate
// and up products) through Cs, each lane 4 adjacent columns of a row; rows of this group only (the
// block's other rows belong to other visits), columns below out_n.
void store_matrix(uint m0, uint n0, uint g_local, uint gstart, uint gend) {
  const uint sg_m = gl_SubgroupID % SG_M, sg_n = gl_SubgroupID / SG_M;
  const uint base = gl_SubgroupID * NH * FRAGMENT;
  [[unroll]] for (uint fm = 0; fm < FM; ++fm)
    [[unroll]] for (uint fn = 0; fn < FN; ++fn) {
      [[unroll]] for (uint h = 0; h < NH; ++h)
        VKGMM_CM_STORE_ROWS(accs[fm * FN * NH + h * FN + fn], Cs, base + h * FRAGMENT, CM_N);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = gl_SubgroupInvocationID; e < FRAGMENT / 4u; e += gl_SubgroupSize) {
        const uint r = e / (CM_N / 4u), c = (e % (CM_N / 4u)) * 4u;
        const uint row = m0 + sg_m * WM + fm * CM_M + r;
        const uint col = n0 + sg_n * WN + fn * CM_N + c;
        if (row < gstart || row >= gend || col >= pc.out_n) continue;
        const uint at = base + r * CM_N + c;
        const vec4 gate = vec4(Cs[at], Cs[at + 1u], Cs[at + 2u], Cs[at + 3u]);
        const uint up_at = at + (NH - 1u) * FRAGMENT;
        const vec4 up = vec4(Cs[up_at], Cs[up_at + 1u], Cs[up_at + 2u], Cs[up_at + 3u]);
        const float weight = WEIGHTED ? intBitsToFloat(meta[pc.weight_off + row]) : 1.0;
        store_chunk(slot_of_row(row), col, weight, gate, up, g_local);
      }
      // Every lane's reads done before the next block overwrites Cs.
      subgroupBarrier();
    }
}
