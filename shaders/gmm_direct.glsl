// gmm's direct schedule (included by gmm.comp): each invocation reads its micro-tile's operands straight
// from the buffers, every K_SLICES-th iteration of its K walk (the slices' sums are added after the
// reduction).

// The block walk's choices for this pipeline (reduce_direct4 gives the reasons), made once there and
// handed to walk_quad.
struct Walk {
  bool runs;       // the sums of each run of one scale scaled once
  bool mins;       // runs with mins (q4_K, q4_1, q5_1): lhs's sum over each run kept for them
  uint run_quads;  // quads per run of one scale
  uint batch;      // column groups per batch of rhs loads
};

// reduce_direct4's state, at module scope (as acc4) so that its quad of K is a function of its own:
// glslang's copy of an array sized by a specialization-constant expression into a function's parameter
// does not validate. The loads' first elements, per tile: lhs's rows (lhs_row_start), rhs [k, n]'s column
// groups (rhs_group_start) and rhs [n, k]'s columns (rhs_col_start; see reduce_direct4). Per step in flight
// of the block walk (the iteration's step f, column e at step_col(f, e)): each column's scales, quant
// words and high bits (q6_K's and q5_K's qh, q3_K's hmask), prepared (quant.glsl's q_high_word). Per run
// of one scale: the partial sums and, for formats with mins, the sums of lhs.
uint lhs_row_start[RM];
uint rhs_group_start[ACC4_COLS];
uint rhs_col_start[4 * ACC4_COLS];
QStep col_scales[STEPS_IN_FLIGHT * 4 * ACC4_COLS];
uint col_quant_words[STEPS_IN_FLIGHT * 4 * ACC4_COLS][8], col_high_bits[STEPS_IN_FLIGHT * 4 * ACC4_COLS][8];
vec4 run_sums[RM * ACC4_COLS];
float run_lhs_sums[RM];
uint step_col(uint f, uint e) { return f * 4 * ACC4_COLS + e; }

// Quad s (K values k0 + 4s .. k0 + 4s + 3) of the step at k0, the iteration's step f: lhs's 4 values per
// row, rhs's 4 x 4 block per column group, a batch of groups at a time, into acc4, or with runs into part
// and, at a run's end, part scaled into acc4. The high bits' word is q6_K's or q5_K's qh, or q3_K's hmask,
// word s % 8: q6_K's and q5_K's steps are 8 quads, q3_K's four-part step reads each hmask word for each of
// its parts, and formats without high bits never read it.
void walk_quad(Walk walk, uint k0, uint s, uint rbase, uint f) {
  uint kk = k0 + 4 * s;
  vec4 a[RM];
  [[unroll]] for (uint i = 0; i < RM; ++i) a[i] = load4_lhs(lhs_row_start[i] + kk);
  const bool run_starts = walk.runs && s % walk.run_quads == 0u;
  if (walk.mins)
    [[unroll]] for (uint i = 0; i < RM; ++i) run_lhs_sums[i] = (run_starts ? 0.0 : run_lhs_sums[i]) + ((a[i].x + a[i].y) + (a[i].z + a[i].w));
  [[unroll]] for (uint v0 = 0; v0 < ACC4_COLS; v0 += walk.batch) {
    vec4 b[4 * ACC4_COLS];  // 4 * batch used: the batch is not a constant expression where glslang sizes arrays
    [[unroll]] for (uint w = 0; w < walk.batch; ++w) {
      uint v = v0 + w;
      if (TRANSPOSE_RHS) {
        [[unroll]] for (uint c = 0; c < 4; ++c) {
          uint e = 4 * v + c, fe = step_col(f, e);
#ifdef VKGMM_BLOCK_RHS
          uint word = col_quant_words[fe][s % Q_RUN_WORDS], hi_word = col_high_bits[fe][s % 8u];
          // One decoder call (it is inlined at each): scaled here unless the run's sum is.
          vec4 t = q_raw4(col_scales[fe], word, hi_word, s);
          if (!walk.runs) t = q_scaled4(col_scales[fe], s, t);
#else
          vec4 t = load4_rhs(rhs_col_start[e] + kk);
#endif
          [[unroll]] for (uint q = 0; q < 4; ++q) b[q * walk.batch + w][c] = t[q];
        }
      } else {
        [[unroll]] for (uint q = 0; q < 4; ++q) b[q * walk.batch + w] = load4_rhs(rbase + (kk + q) * pc.n + rhs_group_start[v]);
      }
    }
    [[unroll]] for (uint i = 0; i < RM; ++i)
      [[unroll]] for (uint w = 0; w < walk.batch; ++w) {
        uint v = v0 + w;
        vec4 c = walk.runs ? (run_starts ? vec4(0.0) : run_sums[i * ACC4_COLS + v]) : acc4[i * ACC4_COLS + v];
        [[unroll]] for (uint q = 0; q < 4; ++q) c = fma(vec4(a[i][q]), b[q * walk.batch + w], c);
        if (walk.runs) run_sums[i * ACC4_COLS + v] = c;
        else acc4[i * ACC4_COLS + v] = c;
      }
  }
  if (walk.runs && s % walk.run_quads == walk.run_quads - 1u)
    [[unroll]] for (uint v = 0; v < ACC4_COLS; ++v) {
      uint e = step_col(f, 4 * v);
      vec4 scale = vec4(q_run_scale(col_scales[e], s), q_run_scale(col_scales[e + 1], s),
                        q_run_scale(col_scales[e + 2], s), q_run_scale(col_scales[e + 3], s));
      vec4 mins = vec4(q_run_min(col_scales[e], s), q_run_min(col_scales[e + 1], s),
                       q_run_min(col_scales[e + 2], s), q_run_min(col_scales[e + 3], s));
      [[unroll]] for (uint i = 0; i < RM; ++i) {
        vec4 c = fma(scale, run_sums[i * ACC4_COLS + v], acc4[i * ACC4_COLS + v]);
        acc4[i * ACC4_COLS + v] = walk.mins ? fma(-mins, vec4(run_lhs_sums[i]), c) : c;
      }
    }
}

// With 4-element loads: one tile's reduction into acc4 (row i, column group v at i * ACC4_COLS + v).
void reduce_direct4(uint m0, uint n0, uint g_local, uint tx, uint ty, uint slice) {
  [[unroll]] for (uint i = 0; i < RM; ++i) lhs_row_start[i] = pc.lhs_off + lhs_row(min(m0 + ty + i * TY, pc.m - 1)) * pc.k;
  uint rbase = pc.rhs_off + g_local * pc.k * pc.n;
  // Each invocation owns RN/4 groups of 4 adjacent columns (col_of). Per 4 K steps it takes the 4 K
  // rows of a batch of those column groups (VB below) as b[q * VB + w] (q: the K step), then each
  // accumulator of the batch takes its four FMAs in a row: a CPU driver keeps few accumulators in
  // registers, so touch each one once per four K steps. rhs [k, n] gives those rows as vec4s along N
  // directly. rhs [n, k] gives vec4s along K, one per column: 4 of them are the 4 x 4 block transposed,
  // which costs nothing where vectors are held component by component (a CPU driver's SoA registers).
  // rhs_group_start, rhs [k, n]: the group's first column (clamped so the vec4 stays in the row); rhs_col_start, rhs
  // [n, k]: each column's K run (columns past n clamped; never stored).
  [[unroll]] for (uint v = 0; v < ACC4_COLS; ++v) {
    uint col = product_col(v / VN, n0 + col_of(tx, (v % VN) * 4u));
    rhs_group_start[v] = min(col, pc.n - 4u);
    [[unroll]] for (uint c = 0; c < 4; ++c) rhs_col_start[4 * v + c] = rbase + min(col + c, pc.n - 1) * pc.k;
  }
  // Block-format rhs [n, k] (blocks along K): K is walked a step (quant.glsl: 32 values, q4_K 64, under 16
  // rows q2_K 128, and q3_K 128 in the texel build) at a time, and each column's step (its scales, its quant
  // words) is read once per step into registers and decoded 4 values at a time from there; q4_K's
  // super-block head (d, dmin, the packed scales) is read once per 256 values and kept. The walk sums the
  // products of lhs with the unscaled values in part over each run of one scale, which then scales the
  // run's sum once per accumulator (a run's min comes off as min * the row's sum of lhs over the run),
  // except q4_K at 16 rows per invocation (prefill's 32 x 128 tiles), which scales each value as it decodes
  // it: its runs cost 2 * 16 * 16 FMAs and 16 * 32 adds per run of 8 quads beside a second set of
  // accumulators, where scaling each value costs 16 * 32 FMAs. Measured on lavapipe against the unquantized
  // peer: scaling each value is faster for q4_K at 16 rows; runs are faster at 2 rows (decode) for q4_0 and
  // q4_K, and q8_0 at 16 rows keeps runs (even by CPU time, slower per value scaled by gpu ms).
  const bool WALK_STEPS = RHS_BLOCKS && TRANSPOSE_RHS;
  // Not a specialization-constant expression (glslang emitted one whose id spirv-val found undefined
  // where the loops below use it); folded all the same once the constants are specialized.
  const bool values_scaled = q_values_scaled(RM);
  // q2_K's and q3_K's wide steps (Q_WIDE_PARTS) under 16 rows per invocation (decode): at 16 rows
  // (prefill) four parts measured no faster on lavapipe than one. Only with one step in flight: the host
  // makes k a multiple of the table's step times the steps in flight, and a wide step divides k (whole
  // super-blocks) only alone.
  const uint walk_parts = RM < 16u && STEPS_IN_FLIGHT == 1u ? Q_WIDE_PARTS : 1u;
  const bool WALK_RUNS = WALK_STEPS && !values_scaled;
  const bool WALK_MINS = WALK_RUNS && Q_HAS_MINS;
  // A step: a block walk's Q_STEP_VALUES (times its parts: q2_K's, q3_K's), an element type's quad. An
  // iteration takes STEPS_IN_FLIGHT steps (k a multiple of it: above), unrolled below, so that
  // their loads are in flight together: a block walk reads every step's words before the first quad's FMAs.
  const uint step_values = WALK_STEPS ? Q_STEP_VALUES * walk_parts : 4u;
  const uint kstep = step_values * STEPS_IN_FLIGHT;
  const uint run_quads = Q_RUN_QUADS;
  // Column groups per batch of rhs loads (b below): one, its 4 x 4 block loaded right before the FMAs
  // of every row that use it, so 16 values are live at a time instead of the quad's 16 * ACC4_COLS, which a
  // CPU driver spills; measured on lavapipe it is faster than loading every group first on the gmm
  // presets and the block-format decodes. Every group first stays where that measured better: q4_K
  // scaling each value as it decodes it (16 rows per invocation), and rhs [n, k] of an element type,
  // whose loads are 4 * ACC4_COLS separate K runs in memory, all in flight together that way.
  // Block formats stored [k, n] take one group at a time too, unmeasured (the presets store [n, k]).
  const uint VB = (WALK_STEPS && values_scaled) || (TRANSPOSE_RHS && !WALK_STEPS) ? ACC4_COLS : 1u;
  const Walk walk = Walk(WALK_RUNS, WALK_MINS, run_quads, VB);
  uvec4 qhead[4 * ACC4_COLS];
  // K slices take every K_SLICES-th iteration, whole steps (a block format's steps lie in whole blocks).
  for (uint k0 = slice * kstep; k0 < pc.k; k0 += K_SLICES * kstep) {
#ifdef VKGMM_BLOCK_RHS
    if (WALK_STEPS)
      [[unroll]] for (uint f = 0; f < STEPS_IN_FLIGHT; ++f) {
        uint at = k0 + f * step_values;
        // A lead (q4_K's scales) once per super-block: at a step that starts one, and at an iteration's
        // first step when there is more than one slice, whose iterations are K_SLICES apart, each maybe in a
        // super-block of its own.
        if (Q_HAS_LEAD && ((f == 0u && K_SLICES > 1u) || at % Q_BLOCK_VALUES == 0u))
          [[unroll]] for (uint e = 0; e < 4 * ACC4_COLS; ++e) qhead[e] = q_lead_at(rhs_col_start[e] - pc.rhs_off + at);
        [[unroll]] for (uint e = 0; e < 4 * ACC4_COLS; ++e) {
          uint fe = step_col(f, e);
          q_step_walk(rhs_col_start[e] - pc.rhs_off + at, walk_parts, qhead[e], col_scales[fe], col_quant_words[fe],
                      col_high_bits[fe]);
        }
      }
#endif
    // Each step's quads (walk_quad), in a loop of two shapes. q4_K's 64-value steps where each value is
    // scaled as it is decoded (16 rows per invocation) run their 16 quads as a loop: unrolled, a step
    // (16 x 16 x 16 FMAs and the decoding) is machine code far beyond a CPU's instruction cache; looped,
    // q4_K prefill took ~12 % less CPU time on lavapipe (alternated against bf16 in one process, 5 rounds
    // each). q8_0's 8-quad steps took 4-8 % more looped, and the other loads (one quad per K step) were
    // 1.7x slower: they stay unrolled, as do the per-run sums, whose run boundaries fold away unrolled.
    [[unroll]] for (uint f = 0; f < STEPS_IN_FLIGHT; ++f) {
      uint at = k0 + f * step_values;
      if (WALK_STEPS && !WALK_RUNS && step_values > 32u) {
        [[dont_unroll]] for (uint s = 0; s < step_values / 4; ++s) walk_quad(walk, at, s, rbase, f);
      } else {
        [[unroll]] for (uint s = 0; s < step_values / 4; ++s) walk_quad(walk, at, s, rbase, f);
      }
    }
  }
}

// With scalar loads: into acc (row i, product column j at i * ACC_COLS + j).
void reduce_direct(uint m0, uint n0, uint g_local, uint tx, uint ty, uint slice) {
  // Clamped addresses keep every read in bounds; the rows and columns they duplicate are never stored.
  uint arow[RM], bcol[ACC_COLS];
  [[unroll]] for (uint i = 0; i < RM; ++i) arow[i] = pc.lhs_off + lhs_row(min(m0 + ty + i * TY, pc.m - 1)) * pc.k;
  [[unroll]] for (uint j = 0; j < ACC_COLS; ++j) bcol[j] = min(product_col(j / RN, n0 + tx + (j % RN) * TX), pc.n - 1);
  for (uint kk = slice; kk < pc.k; kk += K_SLICES) {
    float a[RM], b[ACC_COLS];
    [[unroll]] for (uint i = 0; i < RM; ++i) a[i] = load_lhs(arow[i] + kk);
    [[unroll]] for (uint j = 0; j < ACC_COLS; ++j) b[j] = load_rhs(rhs_index(g_local, kk, bcol[j]));
    [[unroll]] for (uint i = 0; i < RM; ++i)
      [[unroll]] for (uint j = 0; j < ACC_COLS; ++j) acc[i * ACC_COLS + j] = fma(a[i], b[j], acc[i * ACC_COLS + j]);
  }
}
