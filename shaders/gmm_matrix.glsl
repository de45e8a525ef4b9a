// gmm's matrix-unit schedule (the VKGMM_MATRIX builds, included by gmm.comp): the shared schedule's
// staging (gmm_shared.glsl) into the f16 stage, the products on cooperative matrices (matrix_tile.glsl).
#define MT_ROWS TM
#define MT_COLS TN
#define MT_STEP TK
#define MT_HALVES NH
#define MT_SPLIT_B RHS_BLOCKS

// The visit being stored (matrix_store4 reads it): its first row and column, its group's rows and index.
uint mt_m0, mt_n0, mt_gstart, mt_gend, mt_g_local;
void matrix_store4(uint r, uint c, vec4 v, vec4 u) {
  const uint row = mt_m0 + r, col = mt_n0 + c;
  if (row < mt_gstart || row >= mt_gend || col >= pc.out_n) return;
  const float weight = WEIGHTED ? intBitsToFloat(meta[pc.weight_off + row]) : 1.0;
  store_chunk(slot_of_row(row), col, weight, v, u, mt_g_local);
}

#include "matrix_tile.glsl"

// One visit's tile: its reduction over K, then its rows of this group through the epilogue.
void run_matrix(uint lid, uint m0, uint n0, uint g_local, uint gstart, uint gend) {
  stage_sources(lid, m0, n0, g_local);
  matrix_zero();
  uint steps;
  int k0 = first_k_step(steps);
  if (steps > 0) stage_load(k0, true);
  for (; k0 < int(pc.k); k0 += int(TK)) {
    stage_store();
    barrier();
    if (k0 + int(TK) < int(pc.k)) stage_load(k0 + int(TK), false);  // in flight while this step computes
    matrix_step();
    barrier();
  }
  matrix_finish();
  mt_m0 = m0;
  mt_n0 = n0;
  mt_gstart = gstart;
  mt_gend = gend;
  mt_g_local = g_local;
  matrix_store();
}
