// gmm's shared schedule (included by gmm.comp): the workgroup stages [TM, TK] of lhs and [TK, TN] of rhs
// in shared memory per K step, and each invocation reduces its RM x RN accumulators from there.

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

// One tile's reduction over K into acc4 (row i, column group v at i * VNH + v).
void reduce_shared(uint lid, uint m0, uint n0, uint g_local, uint tx, uint ty) {
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
}
