// gmm's matrix-unit schedule (the VKGMM_MATRIX builds, included by gmm.comp before the shared schedule,
// whose K steps it computes: gmm_shared.glsl's reduce_shared): an output block on cooperative matrices
// (matrix_tile.glsl), stored through gmm's epilogue.
#define MT_ROWS TM
#define MT_COLS TN
#define MT_STEP TK
#define MT_HALVES HALVES

// The visit being stored (matrix_store4 reads it): its first row and column, its group's rows and index.
uint mt_m0, mt_n0, mt_gstart, mt_gend, mt_g_local;
void matrix_store4(uint r, uint c, vec4 v, vec4 u) {
  const uint row = mt_m0 + r, col = mt_n0 + c;
  if (row < mt_gstart || row >= mt_gend || col >= pc.out_n) return;
  const float weight = WEIGHTED ? intBitsToFloat(meta[pc.weight_off + row]) : 1.0;
  store_chunk(slot_of_row(row), col, weight, v, u, mt_g_local);
}

#include "matrix_tile.glsl"

// The visit's block at (m0, n0), reduced and finished, to its rows of group g_local (gstart .. gend).
void matrix_store_visit(uint m0, uint n0, uint gstart, uint gend, uint g_local) {
  mt_m0 = m0;
  mt_n0 = n0;
  mt_gstart = gstart;
  mt_gend = gend;
  mt_g_local = g_local;
  matrix_store();
}
