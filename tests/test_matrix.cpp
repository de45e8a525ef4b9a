// The matrix schedule (cooperative matrices: f16 products accumulated in f32) against the reference: gmm
// with odd m, k and n, empty groups, every weight format it takes (f16 and the block formats, dequantized
// into its f16 stage), both rhs layouts, every output type, shards into existing_out, device group sizes,
// and the routed call with its epilogue (bias, SwiGLU, weights, the combine); tgmm in every layout; the
// backward. Where the device's matrix units
// are not in use (DeviceInfo::matrix_extension empty: no cooperative-matrix extension, or vkgmm built
// without a compiler for the one it has) these are skipped, saying why; the refusals and the fallback of a
// forced schedule run on every device.
#include "block_formats.hpp"
#include "context_impl.hpp"
#include "matrix_harness.hpp"

namespace vkgmm::test {
namespace {

struct MatrixCase {
  int64_t m, k, n, G;
  Sizes sizes;
  DType rhs, out;
  bool transpose;
  std::optional<Tiling> tiling;
  bool shard;         // a window of the groups, into existing_out
  bool device_sizes;  // the group sizes in a device buffer too (the host path's bits)
  uint32_t seed;
};

std::string case_name(const MatrixCase& c) {
  std::string s = "m" + std::to_string(c.m) + "k" + std::to_string(c.k) + "n" + std::to_string(c.n) + "g" +
                  std::to_string(c.G) + "_" + sizes_name(c.sizes) + "_f16" + dtype_name(c.rhs) + dtype_name(c.out) +
                  (c.transpose ? "_T" : "");
  if (c.tiling)
    s += "_t" + std::to_string(c.tiling->tm) + "x" + std::to_string(c.tiling->tk) + "x" + std::to_string(c.tiling->tn);
  if (c.shard) s += "_shard";
  if (c.device_sizes) s += "_dev";
  return s;
}
void PrintTo(const MatrixCase& c, std::ostream* os) { *os << case_name(c); }

std::vector<MatrixCase> matrix_cases() {
  std::vector<MatrixCase> out;
  struct Shape {
    int64_t m, k, n, G;
  };
  const Shape shapes[] = {
      {1, 1, 1, 1},      // the smallest problem
      {37, 19, 23, 4},   // multiples of nothing
      {8, 3, 5, 6},      // k and n below a matrix; more groups than rows
      {96, 520, 24, 3},  // a long K, ragged against every step
      {200, 64, 72, 16}, // many groups
      {130, 40, 70, 7},
  };
  const Sizes kinds[] = {Sizes::random, Sizes::empty_ends, Sizes::split_tiles, Sizes::sum_below_m};
  const std::optional<Tiling> tilings[] = {std::nullopt, Tiling{32, 32, 32}, Tiling{64, 16, 64}, Tiling{16, 128, 64}};
  const DType outs[] = {DType::f32, DType::f16, DType::bf16};
  uint32_t seed = 1;
  int i = 0;
  for (const Shape& s : shapes)
    for (Sizes kind : kinds) {
      if (s.G == 1 && kind != Sizes::random) continue;
      out.push_back({s.m, s.k, s.n, s.G, kind, DType::f16, outs[i % 3], i % 2 == 1, tilings[i % 4], i % 3 == 2 && s.G > 1,
                     i % 4 == 1, seed++});
      ++i;
    }
  // The block formats, in both layouts: the blocked axis two blocks long, the other odd.
  for (DType f : block_formats())
    for (bool transpose : {true, false}) {
      const int64_t B = int64_t(block_elements(f));
      out.push_back({45, transpose ? 2 * B : 21, transpose ? 19 : 2 * B, 3, Sizes::empty_ends, f, DType::f32, transpose,
                     std::nullopt, false, transpose, seed++});
    }
  return out;
}

class MatrixSweep : public MatrixTest, public ::testing::WithParamInterface<MatrixCase> {};

TEST_P(MatrixSweep, MatchesReference) {
  const MatrixCase& c = GetParam();
  std::mt19937 rng(c.seed);
  GmmProblem p;
  p.m = c.m;
  p.k = c.k;
  p.n = c.n;
  p.lhs_type = DType::f16;
  p.rhs_type = c.rhs;
  p.out_type = c.out;
  p.group_sizes = make_group_sizes(c.sizes, c.G, c.m, rng);
  p.transpose_rhs = c.transpose;
  p.schedule = Schedule::matrix;
  if (c.tiling) p.tiling = TilingChoice::of(*c.tiling);
  int64_t g_local = c.G;
  if (c.shard) {
    p.group_offset = c.G / 3;
    g_local = std::max<int64_t>(1, c.G / 2);
    p.num_rhs_groups = g_local;
    p.existing_out = true;
  }
  ASSERT_TRUE(runs_on_matrix_units(GmmPlan(ctx(), p)));
  const auto lhs = random_values(size_t(c.m * c.k), p.lhs_type, rng);
  const auto rhs = random_values(size_t(g_local * c.k * c.n), p.rhs_type, rng);
  std::vector<float> ex;
  if (p.existing_out) ex = random_values(size_t(c.m * c.n), p.out_type, rng);
  const auto got = run_gmm(ctx(), p, lhs, rhs, ex);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs, ex), tol.atol, tol.rtol));
  if (c.device_sizes) EXPECT_TRUE(same_bits(run_gmm_device(ctx(), p, lhs, rhs, ex), got)) << "device group sizes";
}

INSTANTIATE_TEST_SUITE_P(Matrix, MatrixSweep, ::testing::ValuesIn(matrix_cases()),
                         [](const ::testing::TestParamInfo<MatrixCase>& info) { return case_name(info.param); });

// The stage's buffers: one, or two where the options ask for them ($VKGMM_STAGE_BUFFERS=2: ctest's .stages2
// run of these tests); a 32 x 32 block's two fit the shared memory of any device with matrix units. Over K
// steps enough to use each buffer several times, the first (ragged) one into buffer 0 too, both rhs
// layouts, a block format's two parts.
TEST_F(MatrixTest, StageBuffersAsTheOptionsAsk) {
  const uint32_t asked = ContextInternals::of(ctx()).dev.options.stage_buffers;
  for (const DType rhs_type : {DType::f16, DType::q4_K})
    for (const bool transpose : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(rhs_type)) + (transpose ? " rhs [n, k]" : " rhs [k, n]"));
      std::mt19937 rng(transpose + 60);
      GmmProblem p;
      p.m = 45;
      p.k = rhs_type == DType::q4_K && transpose ? 512 : 500;  // blocks along k: whole ones
      p.n = rhs_type == DType::q4_K && !transpose ? 256 : 40;  // blocks along n: whole ones
      p.lhs_type = DType::f16;
      p.rhs_type = rhs_type;
      p.out_type = DType::f32;
      p.group_sizes = {20, 0, 25};
      p.transpose_rhs = transpose;
      p.schedule = Schedule::matrix;
      p.tiling = TilingChoice::of({32, 32, 32});
      const GmmPlan plan(ctx(), p);
      ASSERT_TRUE(runs_on_matrix_units(plan));
      EXPECT_EQ(op_constants(plan)[VKGMM_ID_STAGES], asked == 2 ? 2u : 1u);
      const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
      const auto rhs = random_values(size_t(3 * p.k * p.n), p.rhs_type, rng);
      const auto got = run_gmm(ctx(), p, lhs, rhs, {});
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs, {}), tol.atol, tol.rtol));
    }
}

// Routed by expert ids with the whole epilogue: a bias, SwiGLU's gate and up halves meeting in one
// column block, the routing weights and the combine in token order over existing_out; per slot too.
TEST_F(MatrixTest, RoutedWithTheEpilogue) {
  for (const bool combine : {true, false})
    for (const bool swiglu : {true, false}) {
      SCOPED_TRACE(std::string(combine ? "combined" : "per slot") + (swiglu ? " swiglu" : ""));
      std::mt19937 rng(combine * 2 + swiglu + 40);
      GmmProblem p;
      const int64_t E = 5, top_k = 2;
      p.m = 29;
      p.k = 44;
      p.n = swiglu ? 2 * 37 : 37;
      p.lhs_type = DType::f16;
      p.rhs_type = DType::f16;
      p.out_type = DType::f32;
      p.num_rhs_groups = E;
      p.routing = {top_k, false, combine, E};
      p.epilogue = {true, swiglu ? Activation::swiglu : Activation::none};
      p.existing_out = combine;
      p.schedule = Schedule::matrix;
      ASSERT_TRUE(runs_on_matrix_units(GmmPlan(ctx(), p)));
      std::vector<int32_t> ids;
      for (int64_t t = 0; t < p.m; ++t) ids.push_back(int32_t(t % E)), ids.push_back(int32_t((t + 2 + t / 4) % E));
      std::vector<float> weights;
      if (combine)
        for (int64_t i = 0; i < p.m * top_k; ++i) weights.push_back(0.25f + 0.5f * float(i % 3) / 2);
      const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
      const auto rhs = random_values(size_t(E * p.k * p.n), p.rhs_type, rng);
      const auto bias = random_values(size_t(E * p.n), DType::f32, rng);
      std::vector<float> ex;
      if (combine) ex = random_values(gmm_out_elements(p), p.out_type, rng);
      const auto got = run_gmm_routed(ctx(), p, lhs, rhs, ids, weights, ex, bias);
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(got, reference::gmm_routed(p, lhs, rhs, ids, weights, ex, bias), tol.atol, tol.rtol));
    }
}

// tgmm on the matrix units: both lhs layouts, both out layouts, existing_out, every output type, empty
// groups and rows past the groups, the group sizes on the device (the host path's bits).
struct TgmmMatrixCase {
  int64_t m, k, n, G;
  Sizes sizes;
  bool lhs_mk, out_nk, existing_out;
  DType out;
  std::optional<Tiling> tiling;
  uint32_t seed;
};
std::string case_name(const TgmmMatrixCase& c) {
  std::string s = "m" + std::to_string(c.m) + "k" + std::to_string(c.k) + "n" + std::to_string(c.n) + "g" +
                  std::to_string(c.G) + "_" + sizes_name(c.sizes) + "_" + dtype_name(c.out) + (c.lhs_mk ? "_mk" : "_km") +
                  (c.out_nk ? "_nk" : "") + (c.existing_out ? "_ex" : "");
  if (c.tiling)
    s += "_t" + std::to_string(c.tiling->tm) + "x" + std::to_string(c.tiling->tk) + "x" + std::to_string(c.tiling->tn);
  return s;
}
void PrintTo(const TgmmMatrixCase& c, std::ostream* os) { *os << case_name(c); }

std::vector<TgmmMatrixCase> tgmm_matrix_cases() {
  std::vector<TgmmMatrixCase> out;
  struct Shape {
    int64_t m, k, n, G;
  };
  const Shape shapes[] = {{1, 1, 1, 1}, {37, 19, 23, 4}, {8, 3, 5, 6}, {300, 40, 70, 7}, {200, 64, 72, 16}};
  const Sizes kinds[] = {Sizes::random, Sizes::empty_ends, Sizes::sum_below_m};
  const std::optional<Tiling> tilings[] = {std::nullopt, Tiling{16, 32, 32}, Tiling{64, 64, 16}};
  const DType outs[] = {DType::f32, DType::f16, DType::bf16};
  uint32_t seed = 60;
  int i = 0;
  for (const Shape& s : shapes)
    for (Sizes kind : kinds) {
      if (s.G == 1 && kind != Sizes::random) continue;
      out.push_back({s.m, s.k, s.n, s.G, kind, i % 2 == 0, i % 3 == 1, i % 4 == 2, outs[i % 3], tilings[i % 3], seed++});
      ++i;
    }
  return out;
}

class TgmmMatrixSweep : public MatrixTest, public ::testing::WithParamInterface<TgmmMatrixCase> {};

TEST_P(TgmmMatrixSweep, MatchesReference) {
  const TgmmMatrixCase& c = GetParam();
  std::mt19937 rng(c.seed);
  TgmmProblem p;
  p.m = c.m;
  p.k = c.k;
  p.n = c.n;
  p.group_sizes = make_group_sizes(c.sizes, c.G, c.m, rng);
  p.lhs_mk = c.lhs_mk;
  p.out_nk = c.out_nk;
  p.existing_out = c.existing_out;
  p.lhs_type = p.rhs_type = DType::f16;
  p.out_type = c.out;
  p.schedule = Schedule::matrix;
  if (c.tiling) p.tiling = TilingChoice::of(*c.tiling);
  ASSERT_TRUE(runs_on_matrix_units(TgmmPlan(ctx(), p)));
  const auto lhs = random_values(size_t(c.m * c.k), p.lhs_type, rng);
  const auto rhs = random_values(size_t(c.m * c.n), p.rhs_type, rng);
  std::vector<float> ex;
  if (p.existing_out) ex = random_values(size_t(c.G * c.k * c.n), p.out_type, rng);
  const auto got = run_tgmm(ctx(), p, lhs, rhs, ex);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(got, reference::tgmm(p, lhs, rhs, ex), tol.atol, tol.rtol));
  EXPECT_TRUE(same_bits(run_tgmm_device(ctx(), p, lhs, rhs, ex), got)) << "device group sizes";
}

INSTANTIATE_TEST_SUITE_P(Matrix, TgmmMatrixSweep, ::testing::ValuesIn(tgmm_matrix_cases()),
                         [](const ::testing::TestParamInfo<TgmmMatrixCase>& info) { return case_name(info.param); });

// The backward of an f16 gmm on the matrix units: d_lhs (a gmm with rhs transposed) and d_rhs (a tgmm),
// both layouts of rhs, a window of the groups.
TEST_F(MatrixTest, BackwardOnTheMatrixUnits) {
  for (const bool transpose : {false, true})
    for (const bool shard : {false, true}) {
      SCOPED_TRACE(std::string(transpose ? "T" : "N") + (shard ? " shard" : ""));
      std::mt19937 rng(70 + transpose + 2 * shard);
      GmmProblem p;
      p.m = 70;
      p.k = 18;
      p.n = 14;
      p.group_sizes = make_group_sizes(Sizes::empty_ends, 6, 60, rng);
      p.transpose_rhs = transpose;
      p.lhs_type = p.rhs_type = p.out_type = DType::f16;
      p.schedule = Schedule::matrix;
      int64_t g_local = 6;
      if (shard) {
        p.group_offset = 2;
        p.num_rhs_groups = g_local = 3;
      }
      const GmmBackwardPlan plan(ctx(), p);
      EXPECT_TRUE(runs_on_matrix_units(plan.d_lhs_plan())) << "d_lhs";
      EXPECT_TRUE(runs_on_matrix_units(plan.d_rhs_plan())) << "d_rhs";
      const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
      const auto rhs = random_values(size_t(g_local * p.k * p.n), p.rhs_type, rng);
      const auto d_out = random_values(size_t(p.m * p.n), p.out_type, rng);
      const auto got = run_backward(ctx(), p, lhs, rhs, d_out);
      const auto want = reference::gmm_backward(p, lhs, rhs, d_out);
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, tol.atol, tol.rtol)) << "d_lhs";
      EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, tol.atol, tol.rtol)) << "d_rhs";
    }
}

// A routed call that saves its pre-activations (the backward's input), n odd: each slot's product plus
// bias, in the plan's workspace, and nothing past its columns (the epilogue of the columns past n in a
// subgroup's chunk of 4 never runs: it would write the next slot's words, and past the last slot's the
// status word).
TEST_F(MatrixTest, RoutedSavesItsPreActivations) {
  std::mt19937 rng(81);
  GmmProblem p;
  const int64_t E = 3, top_k = 2, T = 13;
  p.m = T;
  p.k = 20;
  p.n = 2 * 19;
  p.lhs_type = p.rhs_type = DType::f16;
  p.num_rhs_groups = E;
  p.routing = {top_k, false, false, E};
  p.epilogue = {true, Activation::swiglu, true};
  p.schedule = Schedule::matrix;
  const GmmPlan plan(ctx(), p);
  ASSERT_TRUE(runs_on_matrix_units(plan));
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < T; ++t) ids.push_back(int32_t(t % E)), ids.push_back(int32_t((t + 1) % E));
  const auto lhs = random_values(size_t(T * p.k), p.lhs_type, rng);
  const auto rhs = random_values(size_t(E * p.k * p.n), p.rhs_type, rng);
  const auto bias = random_values(size_t(E * p.n), DType::f32, rng);
  Buffer l = upload(ctx(), p.lhs_type, lhs), r = upload(ctx(), p.rhs_type, rhs), b = upload(ctx(), DType::f32, bias);
  Buffer i = ctx().create_buffer(ids.size() * 4), status = status_word(ctx());
  i.upload(ids.data(), ids.size() * 4);
  const size_t out_count = gmm_out_elements(p);
  Buffer o = poisoned(ctx(), out_count * 4), work = poisoned(ctx(), plan.workspace_bytes());
  GmmOperands ops{l.view(), r.view(), o.view()};
  ops.ids = i.view();
  ops.bias = b.view();
  ops.status = status.view();
  ops.workspace = work.view();
  ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  expect_clean_status(status);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(download(o, p.out_type, out_count), reference::gmm_routed(p, lhs, rhs, ids, {}, {}, bias),
                        tol.atol, tol.rtol));
  const BufferView pre = plan.saved_pre_activation(work.view());
  std::vector<float> saved(size_t(T * top_k * p.n));
  work.download(saved.data(), saved.size() * 4, pre.offset - work.view().offset);
  std::vector<float> want(saved.size());
  for (int64_t s = 0; s < T * top_k; ++s)
    for (int64_t c = 0; c < p.n; ++c) {
      const int64_t t = s / top_k, e = ids[size_t(s)];
      double v = bias[size_t(e * p.n + c)];
      for (int64_t kk = 0; kk < p.k; ++kk) v += double(lhs[size_t(t * p.k + kk)]) * rhs[size_t((e * p.k + kk) * p.n + c)];
      want[size_t(s * p.n + c)] = float(v);
    }
  EXPECT_TRUE(all_close(saved, want, 1e-5, 1e-5)) << "saved pre-activations";
}

// Blocks larger than a subgroup's accumulators allow shrink (lavapipe's 8 x 8 matrices give the automatic
// 128 x 128 block 32 per subgroup): the automatic tilings and an explicit large one run.
TEST_F(MatrixTest, LargeBlocksShrinkToTheAccumulators) {
  std::mt19937 rng(90);
  GmmProblem p;
  p.m = 300;
  p.k = 40;
  p.n = 260;
  p.group_sizes = {100, 0, 200};
  p.lhs_type = p.rhs_type = DType::f16;
  p.schedule = Schedule::matrix;
  for (const std::optional<Tiling> t : {std::optional<Tiling>{}, std::optional<Tiling>(Tiling{256, 64, 256})}) {
    SCOPED_TRACE(t ? "256 x 64 x 256" : "automatic");
    p.tiling = t ? TilingChoice::of(*t) : TilingChoice{};
    const GmmPlan plan(ctx(), p);
    ASSERT_TRUE(runs_on_matrix_units(plan));
    const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
    const auto rhs = random_values(size_t(3 * p.k * p.n), p.rhs_type, rng);
    const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
    EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), reference::gmm(p, lhs, rhs), tol.atol, tol.rtol));
  }
  TgmmProblem t;
  t.m = 150;
  t.k = 130;
  t.n = 140;
  t.group_sizes = {70, 80};
  t.lhs_type = t.rhs_type = DType::f16;
  t.schedule = Schedule::matrix;
  ASSERT_TRUE(runs_on_matrix_units(TgmmPlan(ctx(), t)));
  const auto lhs = random_values(size_t(t.m * t.k), t.lhs_type, rng);
  const auto rhs = random_values(size_t(t.m * t.n), t.rhs_type, rng);
  const Tolerance tol = tolerance_for(t.lhs_type, t.rhs_type, t.out_type);
  EXPECT_TRUE(all_close(run_tgmm(ctx(), t, lhs, rhs), reference::tgmm(t, lhs, rhs), tol.atol, tol.rtol)) << "tgmm";
}

// A backward whose forward asked for the matrix units: its parts that cannot take them (f32 gradients,
// the routed passes' f32 rows) run the shared schedule instead of refusing.
TEST_F(MatrixTest, BackwardPartsThatCannotTakeTheMatrixUnitsRunShared) {
  std::mt19937 rng(95);
  GmmProblem p;
  p.m = 30;
  p.k = 12;
  p.n = 10;
  p.group_sizes = {14, 16};
  p.lhs_type = p.rhs_type = DType::f16;
  p.out_type = DType::f32;  // d_out f32: d_lhs's lhs and d_rhs's rhs
  p.schedule = Schedule::matrix;
  const GmmBackwardPlan plan(ctx(), p);
  EXPECT_FALSE(runs_on_matrix_units(plan.d_lhs_plan()));
  EXPECT_FALSE(runs_on_matrix_units(plan.d_rhs_plan()));
  const auto lhs = random_values(size_t(p.m * p.k), p.lhs_type, rng);
  const auto rhs = random_values(size_t(2 * p.k * p.n), p.rhs_type, rng);
  const auto d_out = random_values(size_t(p.m * p.n), p.out_type, rng);
  const auto got = run_backward(ctx(), p, lhs, rhs, d_out);
  const auto want = reference::gmm_backward(p, lhs, rhs, d_out);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, tol.atol, tol.rtol)) << "d_lhs";
  EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, tol.atol, tol.rtol)) << "d_rhs";
  // Routed by ids with a combine: the routed backward's passes (f32 rows) likewise.
  GmmProblem r;
  r.m = 9;
  r.k = 12;
  r.n = 10;
  r.lhs_type = r.rhs_type = r.out_type = DType::f16;
  r.num_rhs_groups = 3;
  r.routing = {2, false, true, 3};
  r.schedule = Schedule::matrix;
  EXPECT_NO_THROW(GmmBackwardPlan(ctx(), r));
}

// Each cooperative-matrix extension the device lists f16 x f16 + f32 shapes of, through its own build
// (ContextOptions::matrix_extension), on a problem whose sums are exact in f32: the same products, bit for
// bit, from both where a driver has both (NVIDIA's). An extension the device does not list gives no matrix
// units.
TEST_F(MatrixTest, EachExtensionItsOwnBuildSameProducts) {
  GmmProblem p;
  p.m = 40;
  p.k = 32;
  p.n = 24;
  p.group_sizes = {16, 0, 21};
  p.lhs_type = p.rhs_type = DType::f16;
  p.schedule = Schedule::matrix;
  std::vector<float> x(40 * 32), w(3 * 32 * 24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) / 8.f;  // multiples of 1/32 in products
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) / 4.f;
  const std::vector<float> want = reference::gmm(p, x, w, {});
  int ran = 0;
  for (const char* extension : {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix"}) {
    SCOPED_TRACE(extension);
    ContextOptions o;
    o.matrix_extension = extension;
    Context c = make_context(o);
    const std::string api = std::string(extension).find("KHR") != std::string::npos ? "KHR " : "NV ";
    bool listed = false;
    for (const std::string& s : c.info().matrix_shapes)
      listed |= s.rfind(api, 0) == 0 && s.find("f16*f16+f32->f32 subgroup") != std::string::npos;
    // Not listed, no build of it in this vkgmm (KHR without a compiler that emits it), or a feature the
    // builds need missing (MatrixFeatures): no matrix units.
    if (c.info().matrix_extension.empty()) continue;
    EXPECT_EQ(c.info().matrix_extension, extension);
    EXPECT_TRUE(listed);
    const std::vector<float> got = run_gmm(c, p, x, w, {});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    ++ran;
  }
  EXPECT_GE(ran, 1);  // the fixture runs only where the default context has matrix units
}

// Automatic on a GPU: f16 calls that would take the shared schedule take the matrix units; f32 ones never.
TEST_F(MatrixTest, AutomaticTakesTheMatrixUnitsForF16) {
  GmmProblem p;
  p.m = 512;
  p.k = 256;
  p.n = 256;
  p.group_sizes = {128, 256, 128};
  EXPECT_FALSE(runs_on_matrix_units(GmmPlan(ctx(), p))) << "f32";
  p.lhs_type = p.rhs_type = DType::f16;
  if (ctx().info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    EXPECT_FALSE(runs_on_matrix_units(GmmPlan(ctx(), p))) << "a CPU device's automatic schedule is direct";
    return;
  }
  // Where the driver is not trusted with them (DeviceInfo::matrix_automatic), only when asked for.
  EXPECT_EQ(runs_on_matrix_units(GmmPlan(ctx(), p)), ctx().info().matrix_automatic);
  p.schedule = Schedule::matrix;
  EXPECT_TRUE(runs_on_matrix_units(GmmPlan(ctx(), p)));
}

// A problem that asks for the matrix schedule where it cannot run is refused, naming why; on a device
// without matrix units every such request is.
TEST_F(DeviceTest, MatrixScheduleRefusedWhereItCannotRun) {
  GmmProblem p;
  p.m = 8;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {8};
  p.schedule = Schedule::matrix;
  expect_refused([&] { GmmPlan(ctx(), p); }, Status::unsupported,
                 ctx().info().matrix_extension.empty() ? "has no matrix units" : "lhs is f32");
  p.lhs_type = DType::f16;
  p.rhs_type = DType::bf16;
  expect_refused([&] { GmmPlan(ctx(), p); }, Status::unsupported,
                 ctx().info().matrix_extension.empty() ? "has no matrix units" : "rhs is bf16");
  if (!ctx().info().matrix_extension.empty()) {
    // With 16-bit storage off the matrix build cannot read its operands.
    ContextOptions o;
    o.storage16 = false;
    Context c = make_context(o);
    p.rhs_type = DType::f16;
    expect_refused([&] { GmmPlan(c, p); }, Status::unsupported, "schedule matrix");
  }
}

// Forced on a context, the matrix schedule runs where it can and the shared schedule elsewhere: f32 gmm
// and tgmm calls still match the reference.
TEST_F(DeviceTest, MatrixForcedOnAContextFallsBackToShared) {
  Context& c = ctx(Schedule::matrix);
  GmmProblem p;
  p.m = 41;
  p.k = 13;
  p.n = 22;
  p.group_sizes = {10, 0, 31};
  EXPECT_FALSE(runs_on_matrix_units(GmmPlan(c, p)));
  expect_gmm_matches_reference(c, p, 3);
  TgmmProblem t;
  t.m = 41;
  t.k = 13;
  t.n = 22;
  t.group_sizes = {10, 0, 31};
  std::mt19937 rng(4);
  const auto lhs = random_values(size_t(t.m * t.k), t.lhs_type, rng);
  const auto rhs = random_values(size_t(t.m * t.n), t.rhs_type, rng);
  EXPECT_FALSE(runs_on_matrix_units(TgmmPlan(c, t)));
  EXPECT_TRUE(all_close(run_tgmm(c, t, lhs, rhs), reference::tgmm(t, lhs, rhs), 1e-3, 1e-5));
}

}  // namespace
}  // namespace vkgmm::test
