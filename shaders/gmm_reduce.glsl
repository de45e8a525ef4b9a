// One work item's reduction in gmm's FMA builds (included by gmm.comp after its schedules): the tile into
// acc by the item's schedule, then the K slices' accumulators summed into the first slice's.

// With K slices, neighbouring lanes take neighbouring K steps where rhs runs along K ([n, k]: a column's
// K run is contiguous, so a subgroup's lanes read one run, as a GEMV's would), else neighbouring columns
// (rhs [k, n]: a K row is contiguous). Without slices both are the same.
const bool SLICE_FASTEST = TRANSPOSE_RHS && K_SLICES > 1u;
// An invocation's number for its place in the tile (its lane w and slice). Where a butterfly sums runs
// of slices in registers (VKGMM_SUBGROUP_SLICES), numbered by subgroup: a run of consecutive numbers is
// then one subgroup's lanes in order, whatever lanes a driver gives gl_LocalInvocationIndex (Vulkan
// promises no order without full subgroups). Each subgroup's count is the workgroup's share (a power of
// two fills them alike), not gl_SubgroupSize, which a driver may report above what it runs.
uint tile_index() {
#ifdef VKGMM_SUBGROUP_SLICES
  return subgroup_index() * (gl_WorkGroupSize.x / gl_NumSubgroups) + gl_SubgroupInvocationID;
#else
  return local_index();
#endif
}
uint lane_in_slice(uint lid) { return SLICE_FASTEST ? lid / K_SLICES : lid % (TX * TY); }
uint slice_of_lane(uint lid) { return SLICE_FASTEST ? lid % K_SLICES : lid / (TX * TY); }

// The reduction of one work item's tile into acc (row i, product column j at i * ACC_COLS + j), summed over
// the K slices into the first slice's. Uniform control flow: every invocation reaches the barriers.
void reduce_item(uint m0, uint n0, uint g_local, uint tx, uint ty, uint slice, uint w) {
  [[unroll]] for (uint e = 0; e < RM * ACC_COLS; ++e) acc[e] = 0.0;
  [[unroll]] for (uint e = 0; e < RM * ACC4_COLS; ++e) acc4[e] = vec4(0.0);

  if (USE_SHARED) reduce_shared(local_index(), m0, n0, g_local, tx, ty);
  else if (VEC4) reduce_direct4(m0, n0, g_local, tx, ty, slice);
  else reduce_direct(m0, n0, g_local, tx, ty, slice);

  // Column j of half h is acc4 group h * VN + j / 4 (RN = 4 * VN): the same layout, h * RN + j.
  if (USE_SHARED || VEC4)
    [[unroll]] for (uint i = 0; i < RM; ++i)
      [[unroll]] for (uint v = 0; v < ACC4_COLS; ++v)
        [[unroll]] for (uint c = 0; c < 4; ++c) acc[i * ACC_COLS + v * 4 + c] = acc4[i * ACC4_COLS + v][c];

  // K_SLICES > 1: the slices' accumulators summed into the first slice's, acc at module scope: glslang's
  // copy of a spec-constant-sized array into a function's parameter does not validate.
#ifdef VKGMM_SUBGROUP_SLICES
  // Slices fastest (the host takes this build only there): a subgroup's lanes are runs of one lane w's
  // slices (lid = w * K_SLICES + slice, numbered by tile_index, sizes powers of two), so a
  // butterfly of shuffles sums each run of min(K_SLICES, lanes) slices in registers, the same bits in
  // every lane of the run. `lanes` counts the subgroup's active lanes, not gl_SubgroupSize: a driver may
  // fill fewer (Intel's SIMD8 or SIMD16 under a reported 32). The workgroup's invocations (a power of two)
  // fill its subgroups alike, so `run` and the branch are the same for the whole workgroup. Where a
  // subgroup holds fewer slices than K_SLICES, one shared round adds the K_SLICES / run partial sums in
  // slice order: E * W * K_SLICES / run floats of As4, within its SHARED_A (half the slices') for run >= 2.
  const uint lanes = subgroupBallotBitCount(subgroupBallot(true));
  const uint run = min(K_SLICES, lanes);
  if (K_SLICES > 1u && SLICE_FASTEST && run >= 2u) {
    const uint E = RM * ACC_COLS, W = TX * TY;
    const uint parts = K_SLICES / run;
    // The rounds outermost: NIR unrolls only innermost loops, and an accumulator indexed by a variable
    // goes to local memory.
    for (uint d = run / 2u; d > 0u; d /= 2u)
      [[unroll]] for (uint e = 0; e < E; ++e) acc[e] += subgroupShuffleXor(acc[e], d);
    if (parts > 1u) {
      barrier();  // a persistent workgroup's previous visit has read its sums
      if (slice % run == 0u)
        [[unroll]] for (uint e = 0; e < E; ++e) {
          uint at = (e * W + w) * parts + slice / run;
          As4[at / 4u][at % 4u] = acc[e];
        }
      barrier();
      // The parts' loop outermost: NIR unrolls only innermost loops, so the accumulators stay indexed by
      // constants.
      if (slice == 0u)
        for (uint p = 0u; p < parts; ++p)
          [[unroll]] for (uint e = 0; e < E; ++e) {
            uint at = (e * W + w) * parts + p;
            float part = As4[at / 4u][at % 4u];
            acc[e] = p == 0u ? part : acc[e] + part;
          }
    }
  } else
#endif
  // Else a tree over the slices (a power of two) through As4, which the direct schedule does not stage
  // in (SHARED_A floats: half the slices' accumulators). A round's stores and loads are consecutive words
  // across neighbouring lanes: indexed by slice fastest where the lanes run over the slices
  // (SLICE_FASTEST), else by lane w of the W in a slice.
  if (K_SLICES > 1u) {
    const uint E = RM * ACC_COLS, W = TX * TY;
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
}
