// One output element of the ordered combine of routed slots: token t's sum of its top_k slots' fp32
// results at column col, in slot order (j ascending), + existing_out, rounded once to OUT_TYPE where it
// is stored. Shared by the combine dispatch (shaders/combine.comp) and gmm's fused combine
// (shaders/gmm.comp, FUSED_COMBINE), so both give the same bits.
// The includer defines VKGMM_PARTIAL_WORD(i), word i of the per-slot results [T * top_k, out_n] from
// their start, and VKGMM_PARTIAL_WORD4(i), words 4i to 4i + 3 (only called where the results start at a
// multiple of 4 words and out_n is one), and declares OUT_TYPE, HAS_EXISTING, load_ex and pc.out_off /
// pc.ex_off.
void combine_store(uint t, uint col, uint out_n, float sum) {
  uint idx = t * out_n + col;
  if (HAS_EXISTING) sum += load_ex(pc.ex_off + idx);
  store_out(pc.out_off + idx, sum, OUT_TYPE);
}
// Output row `row`'s sum of the top_k slots from `slot` on.
void combine_row_element(uint row, uint slot, uint col, uint top_k, uint out_n) {
  float sum = 0.0;
  for (uint j = 0u; j < top_k; ++j) sum += uintBitsToFloat(VKGMM_PARTIAL_WORD((slot + j) * out_n + col));
  combine_store(row, col, out_n, sum);
}
void combine_element(uint t, uint col, uint top_k, uint out_n) { combine_row_element(t, t * top_k, col, top_k, out_n); }
// Columns col to col + 3 at once (col and out_n multiples of 4): a CPU driver gathers one 16-byte vector
// per lane instead of four words, and with vector_store stores one; each column's sum is the same as
// combine_element's.
void combine_element4(uint t, uint col, uint top_k, uint out_n, const bool vector_store) {
  uint slot = t * top_k;
  vec4 sum = vec4(0.0);
  for (uint j = 0u; j < top_k; ++j) sum += uintBitsToFloat(VKGMM_PARTIAL_WORD4(((slot + j) * out_n + col) / 4u));
  uint idx = t * out_n + col;
  if (HAS_EXISTING) [[unroll]] for (uint q = 0u; q < 4u; ++q) sum[q] += load_ex(pc.ex_off + idx + q);
  // One vector store where out's element idx is a multiple of 4 (vector_store: a constant saying out's
  // offset is one; out_n is one here), else four.
  if (vector_store) store4_out(pc.out_off + idx, sum, OUT_TYPE);
  else [[unroll]] for (uint q = 0u; q < 4u; ++q) store_out(pc.out_off + idx + q, sum[q], OUT_TYPE);
}
