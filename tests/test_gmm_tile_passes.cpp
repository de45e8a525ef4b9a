// gmm's tile heights per group (host/gmm_tile_heights.hpp), planned on lavapipe as for a discrete GPU of
// one compute unit (tiling_device.hpp: a CPU device takes one height, and a grid of many waves is where the
// passes pay) and run there: skewed groups' whole tiles in one pass of the kernel, their remainders in
// passes of smaller tiles. Each case checks that the plan took several heights and the result against the
// reference.
#include <set>
#include <string>

#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"

namespace vkgmm::test {
namespace {

// Two long groups among short and empty ones: whole 128-row tiles, and remainders of 3 to 104 rows.
const std::vector<int32_t> kSkewed = {1000, 20, 5, 0, 260, 17, 9, 700, 3};

int64_t total_rows(const std::vector<int32_t>& sizes) {
  int64_t m = 0;
  for (int32_t s : sizes) m += s;
  return m;
}

// The heights of the plan's passes (its op pipelines' block rows), in dispatch order.
std::vector<uint32_t> pass_heights(const GmmPlan& plan) {
  std::vector<uint32_t> rows;
  for (const PlannedPipeline& p : PlanInternals::pipelines(plan))
    if (std::string(p.role) == "op") {
      EXPECT_EQ(p.pass, rows.size());
      rows.push_back(p.constants[VKGMM_ID_BLOCK_ROWS]);
    }
  return rows;
}

// Planned as a discrete GPU with one compute unit: these small problems are then several waves.
Context one_unit_gpu_context(ContextOptions options = {}) { return gpu_planned_context(options, 1); }

GmmProblem skewed_problem(int64_t k, int64_t n) {
  GmmProblem p;
  p.group_sizes = kSkewed;
  p.m = total_rows(kSkewed);
  p.k = k;
  p.n = n;
  return p;
}

// Expects the plan to take several heights, largest first, and the reference's result.
void expect_passes_match(Context& c, const GmmProblem& p, uint32_t seed) {
  const std::vector<uint32_t> heights = pass_heights(GmmPlan(c, p));
  ASSERT_GE(heights.size(), 2u) << "the plan took one tile height";
  EXPECT_EQ(std::set<uint32_t>(heights.begin(), heights.end()).size(), heights.size());
  for (size_t i = 1; i < heights.size(); ++i) EXPECT_LT(heights[i], heights[i - 1]);
  std::mt19937 rng(seed);
  const int64_t G = int64_t(p.group_sizes.size());
  const int64_t groups = p.num_rhs_groups > 0 ? p.num_rhs_groups : G - p.group_offset;
  const int64_t n_out = reference::out_columns(p);
  const std::vector<float> lhs = random_values(size_t(p.m) * p.k, p.lhs_type, rng);
  const std::vector<float> rhs = random_values(size_t(groups) * p.k * p.n, p.rhs_type, rng);
  std::vector<float> ex, bias;
  if (p.existing_out) ex = random_values(size_t(p.m) * n_out, p.out_type, rng);
  if (p.epilogue.bias) bias = random_values(size_t(groups) * p.n, DType::f32, rng);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  const std::vector<float> want = reference::gmm(p, lhs, rhs, ex, bias);
  EXPECT_TRUE(all_close(run_gmm(c, p, lhs, rhs, ex, bias), want, tol.atol * 4, tol.rtol));
}

// Both rhs layouts, the inputs read through texel views (vkgmm's buffers on lavapipe) and as storage
// buffers (what a GPU reads).
TEST(GmmTilePasses, BothRhsLayoutsAndLoads) {
  for (bool texel : {true, false}) {
    ContextOptions o;
    o.texel_loads = texel;
    Context c = one_unit_gpu_context(o);
    for (bool transpose : {false, true}) {
      SCOPED_TRACE(std::string(transpose ? "rhs [n, k]" : "rhs [k, n]") + (texel ? ", texel views" : ", storage"));
      GmmProblem p = skewed_problem(40, 36);
      p.transpose_rhs = transpose;
      expect_passes_match(c, p, 21);
    }
  }
}

// existing_out and 16-bit types; a bias and a gated activation; a window of the groups with rows past
// them (the fill visits, in the first pass); the persistent grid.
TEST(GmmTilePasses, EpiloguesWindowsAndGrids) {
  Context c = one_unit_gpu_context();
  {
    SCOPED_TRACE("existing_out, bf16");
    GmmProblem p = skewed_problem(24, 20);
    p.lhs_type = p.rhs_type = p.out_type = DType::bf16;
    p.existing_out = true;
    expect_passes_match(c, p, 22);
  }
  {
    SCOPED_TRACE("bias and SwiGLU");
    GmmProblem p = skewed_problem(16, 48);
    p.epilogue.bias = true;
    p.epilogue.activation = Activation::swiglu;
    expect_passes_match(c, p, 23);
  }
  {
    SCOPED_TRACE("a window: groups 0 .. 5 of rows past them");
    GmmProblem p = skewed_problem(20, 12);
    p.m += 37;
    p.num_rhs_groups = 6;
    expect_passes_match(c, p, 24);
  }
  {
    SCOPED_TRACE("a window from group 1, existing_out");
    GmmProblem p = skewed_problem(12, 16);
    p.group_offset = 1, p.num_rhs_groups = 7;
    p.existing_out = true;
    expect_passes_match(c, p, 25);
  }
  {
    SCOPED_TRACE("the persistent grid");
    GmmProblem p = skewed_problem(20, 16);
    p.grid = Grid::persistent;
    expect_passes_match(c, p, 26);
  }
  {
    SCOPED_TRACE("three n tiles, per visit and persistent");
    GmmProblem p = skewed_problem(8, 300);
    expect_passes_match(c, p, 27);
    p.grid = Grid::persistent;
    expect_passes_match(c, p, 28);
  }
}

// Every pass binds the operands at their views' offsets: lhs, rhs and out in one buffer at offsets that are
// not multiples of 4 elements (the scalar variants) and that are, the bytes around out left as they were.
TEST(GmmTilePasses, ViewsAtOffsets) {
  Context c = one_unit_gpu_context();
  for (size_t lo : {3, 4}) {
    SCOPED_TRACE("lhs at element " + std::to_string(lo));
    GmmProblem p = skewed_problem(8, 140);
    ASSERT_GE(pass_heights(GmmPlan(c, p)).size(), 2u);
    std::mt19937 rng(29);
    const int64_t G = int64_t(p.group_sizes.size());
    const std::vector<float> lhs = random_values(size_t(p.m) * p.k, p.lhs_type, rng);
    const std::vector<float> rhs = random_values(size_t(G) * p.k * p.n, p.rhs_type, rng);
    // lo = 4: every operand at a multiple of 4 elements; lo = 3: none.
    const size_t out_count = size_t(p.m) * p.n, rb = lo + lhs.size() + lo + 4, ob = rb + rhs.size() + (lo % 4 ? 5 : 4);
    std::vector<float> all(ob + out_count + 7, 0.5f);
    std::copy(lhs.begin(), lhs.end(), all.begin() + lo);
    std::copy(rhs.begin(), rhs.end(), all.begin() + rb);
    Buffer b = c.create_buffer(all.size() * 4);
    b.upload(all.data(), all.size() * 4);
    gmm(c, p, {b.view(lo * 4, lhs.size() * 4), b.view(rb * 4, rhs.size() * 4), b.view(ob * 4, out_count * 4), {}});
    std::vector<float> got(all.size());
    b.download(got.data(), got.size() * 4);
    const std::vector<float> out(got.begin() + ob, got.begin() + ob + out_count);
    EXPECT_TRUE(all_close(out, reference::gmm(p, lhs, rhs), 1e-3, 1e-5));
    for (size_t i = 0; i < all.size(); ++i)
      if (i < ob || i >= ob + out_count) ASSERT_EQ(got[i], all[i]) << "element " << i << " outside out";
  }
}

// A tiling the caller fixed, groups alike in rows, or a grid of one wave (on 64 compute units 64-row tiles
// alone run at once, where the passes wait on their 128-row tiles) keep one height; so does a CPU device's.
TEST(GmmTilePasses, OneHeightWhereTheyDoNotPay) {
  Context gpu = one_unit_gpu_context();
  GmmProblem fixed = skewed_problem(16, 16);
  fixed.tiling = TilingChoice::of({64, 16, 64});
  EXPECT_EQ(pass_heights(GmmPlan(gpu, fixed)).size(), 1u);
  GmmProblem alike = skewed_problem(16, 16);
  alike.group_sizes = std::vector<int32_t>(8, 256);
  alike.m = 2048;
  EXPECT_EQ(pass_heights(GmmPlan(gpu, alike)).size(), 1u);
  Context wide = gpu_planned_context(ContextOptions{}, 64);
  EXPECT_EQ(pass_heights(GmmPlan(wide, skewed_problem(16, 16))).size(), 1u);
  Context cpu = DeviceTest::make_context(ContextOptions{});
  EXPECT_EQ(pass_heights(GmmPlan(cpu, skewed_problem(16, 16))).size(), 1u);
}

}  // namespace
}  // namespace vkgmm::test
