// The matrix stage's two ways of taking a source contiguous along its lines (shaders/stage_lines.glsl): in
// 4 x 4 blocks transposed in registers, where the workgroup's invocations divide its chunks in fours, else
// one chunk at a time. For gmm's rhs [k, n] and tgmm's lhs [m, k] and rhs, a tiling of each kind is found
// among a few, by the plan's own constants (the premise is the device's, not lavapipe's), and run against
// the reference with the groups ragged against every block and step: k and n odd (scalar loads), and
// multiples of 4 (4-element loads, 16-bit chunks packed until they are stored).
#include <random>

#include "matrix_harness.hpp"

namespace vkgmm::test {
namespace {

// Whether a stage of `lines` lines by a step of `depth` is taken in quads by `invocations` (the shaders'
// test, stage_layout.h).
bool in_quads(uint32_t lines, uint32_t depth, uint32_t invocations) {
  return VKGMM_LINES_IN_QUADS(lines * depth / 4, invocations);
}

// A problem of m, k, n with f16 inputs, f32 out and 5 groups (the ends empty), on the matrix units at
// tiling t.
template <class Problem>
Problem ragged_problem(int64_t m, int64_t k, int64_t n, const Tiling& t, std::mt19937& rng) {
  Problem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.lhs_type = p.rhs_type = DType::f16;
  p.out_type = DType::f32;
  p.group_sizes = make_group_sizes(Sizes::empty_ends, 5, m, rng);
  p.schedule = Schedule::matrix;
  p.tiling = TilingChoice::of(t);
  return p;
}

const Tiling kTilings[] = {{64, 64, 64},   {32, 32, 64}, {16, 128, 128}, {64, 16, 64},  {16, 16, 32},
                           {128, 32, 128}, {32, 8, 16},  {16, 8, 16},    {16, 128, 32}, {16, 32, 128}};

TEST_F(MatrixTest, GmmRhsRowsInQuadsAndOneByOne) {
  for (const bool vec4 : {false, true}) {
    bool seen[2] = {false, false};
    uint32_t seed = vec4 ? 190 : 90;
    for (const Tiling& t : kTilings) {
      std::mt19937 rng(seed++);
      const GmmProblem p = ragged_problem<GmmProblem>(150, vec4 ? 204 : 203, vec4 ? 144 : 141, t, rng);
      const GmmPlan plan(ctx(), p);
      ASSERT_TRUE(runs_on_matrix_units(plan));
      const std::vector<uint32_t> c = op_constants(plan);
      const bool quads = in_quads(c[VKGMM_ID_BLOCK_COLS], c[VKGMM_ID_STEP], c[VKGMM_ID_INVOCATIONS]);
      if (seen[quads]) continue;
      seen[quads] = true;
      SCOPED_TRACE(std::string(quads ? "rhs in quads" : "rhs one by one") + (vec4 ? ", 4-element loads" : ""));
      const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
      const auto rhs = random_values(size_t(5 * p.k * p.n), p.rhs_type, rng);
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs, {}), reference::gmm(p, lhs, rhs, {}), tol.atol, tol.rtol));
    }
    EXPECT_TRUE(seen[true]) << "no tiling tried takes rhs [k, n] in quads";
    EXPECT_TRUE(seen[false]) << "no tiling tried takes rhs [k, n] one chunk at a time";
  }
}

// Each operand's way on its own: where only one is in quads, a step row mistaken in it pairs the wrong rows
// of lhs and rhs (the same mistake in both would cancel in the sum over the group's rows).
TEST_F(MatrixTest, TgmmOperandsInQuadsAndOneByOne) {
  for (const bool vec4 : {false, true}) {
    bool seen[2][2] = {};
    uint32_t seed = vec4 ? 200 : 100;
    for (const Tiling& t : kTilings) {
      std::mt19937 rng(seed++);
      TgmmProblem p = ragged_problem<TgmmProblem>(300, vec4 ? 140 : 141, vec4 ? 136 : 137, t, rng);
      p.lhs_mk = true;
      const TgmmPlan plan(ctx(), p);
      ASSERT_TRUE(runs_on_matrix_units(plan));
      // tgmm's block: k rows (lhs's lines), n columns (rhs's), the group's rows
      // the step.
      const std::vector<uint32_t> c = op_constants(plan);
      const uint32_t step = c[VKGMM_ID_STEP], nt = c[VKGMM_ID_INVOCATIONS];
      const bool lhs_quads = in_quads(c[VKGMM_ID_BLOCK_ROWS], step, nt);
      const bool rhs_quads = in_quads(c[VKGMM_ID_BLOCK_COLS], step, nt);
      if (seen[lhs_quads][rhs_quads]) continue;
      seen[lhs_quads][rhs_quads] = true;
      SCOPED_TRACE(std::string("lhs ") + (lhs_quads ? "in quads" : "one by one") + ", rhs " +
                   (rhs_quads ? "in quads" : "one by one") + (vec4 ? ", 4-element loads" : ""));
      const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
      const auto rhs = random_values(size_t(p.m * p.n), p.rhs_type, rng);
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs, {}), reference::tgmm(p, lhs, rhs, {}), tol.atol, tol.rtol));
    }
    EXPECT_TRUE(seen[true][false]) << "no tiling tried takes only lhs [m, k] in quads";
    EXPECT_TRUE(seen[false][true]) << "no tiling tried takes only rhs in quads";
  }
}

}  // namespace
}  // namespace vkgmm::test
