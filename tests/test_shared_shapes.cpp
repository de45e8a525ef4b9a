// The shared schedule's load paths and shapes that the shape sweeps do not reach, against vkgmm::reference:
// - 16-bit chunks loaded packed (A_PACKED / B_PACKED) where the first K step starts before K = 0 (gmm with
//   k below or past one step) and where tgmm's groups of 0..3 rows start anywhere (k and n multiples of 4);
// - the shapes a GPU gets (8 x 8 per invocation, 128- and 32-row tiles, K steps of 16 and 8, fewer
//   invocations than tile rows, chunks that do not split evenly over the invocations), planned on lavapipe
//   as for a discrete GPU (tiling_device.hpp) and run there, each case checking that the plan chose them.
// - tgmm's lhs [k, m] at unaligned offsets on the shared schedule (no pipeline of its own).
// Both ways the inputs are read: texel views (vkgmm's own buffers on lavapipe) and storage buffers (what
// a GPU reads).
#include <functional>
#include <string>

#include "context_impl.hpp"
#include "device_class.hpp"
#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"

namespace vkgmm::test {
namespace {

// The op's kernel shape as planned (its specialization constants).
struct OpShape {
  uint32_t rows = 0, step = 0, cols = 0, rm = 0, rn = 0, invocations = 0;
  bool shared = false;
  // The stage's buffers (STAGES; in a case's want, 2: pinned wherever the device can hold them) and each
  // buffer's lengths.
  uint32_t stages = 1, shared_a = 0, shared_b = 0;
};

template <class Plan>
OpShape op_shape(const Plan& plan) {
  for (const PlannedPipeline& p : PlanInternals::pipelines(plan))
    if (std::string(p.role) == "op") {
      const std::vector<uint32_t>& c = p.constants;
      return {c[VKGMM_ID_BLOCK_ROWS],   c[VKGMM_ID_STEP],        c[VKGMM_ID_BLOCK_COLS],
              c[VKGMM_ID_ROWS_PER_INV], c[VKGMM_ID_COLS_PER_INV], c[VKGMM_ID_INVOCATIONS],
              c[VKGMM_ID_USE_SHARED] != 0, c[VKGMM_ID_STAGES],   c[VKGMM_ID_SHARED_A],
              c[VKGMM_ID_SHARED_B]};
    }
  ADD_FAILURE() << "the plan has no op pipeline";
  return {};
}

std::string shape_text(const OpShape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.step) + "x" + std::to_string(s.cols) + " by " +
         std::to_string(s.invocations) + " invocations of " + std::to_string(s.rm) + "x" + std::to_string(s.rn) +
         (s.shared ? " (shared, " + std::to_string(s.stages) + " stage buffers)" : " (direct)");
}

// Contexts of the test's own: the shared schedule forced (as a CPU device plans it), or planning as a
// discrete GPU with a register file that holds 8 x 8 tiles (512 registers: 256 per wave at two waves).
// texel: read vkgmm's buffers through texel views (else as storage buffers).
Context shared_context(bool texel) {
  ContextOptions o;
  o.schedule = Schedule::shared;
  o.texel_loads = texel;
  return DeviceTest::make_context(o);
}

Context gpu_context(bool texel) {
  ContextOptions o;
  o.texel_loads = texel;
  return gpu_planned_context(o);
}

const char* loads_name(bool texel) { return texel ? "texel views" : "storage buffers"; }

// Runs a case (against the reference; `run` returns its plan's shape) on contexts planning as a GPU, both
// ways the inputs are read, and expects the plan to have chosen `want`. Its stage buffers: 2 where both fit
// the device's shared memory beside 64 bytes and each invocation holds at most half the class's chunks in
// flight, pinned in the cases that want 2 (the 128 x 128 and 128 x 64 blocks stepping 8); elsewhere the
// class's where that holds, else 1.
void expect_gpu_shape(OpShape want, const std::function<OpShape(Context&)>& run) {
  for (bool texel : {true, false}) {
    SCOPED_TRACE(loads_name(texel));
    Context ctx = gpu_context(texel);
    const OpShape s = run(ctx);
    // A step's 4-value chunks (shared_a + shared_b values) over the invocations, within half the class's.
    const uint64_t stage_bytes = (uint64_t(s.shared_a) + s.shared_b) * sizeof(float);
    const uint64_t chunks_each = ((uint64_t(s.shared_a) + s.shared_b) / 4 + s.invocations - 1) / s.invocations;
    const DeviceClass& row = device_class(*ContextInternals::of(ctx).tiling_device.as);
    const bool room = 2 * stage_bytes + 64 <= ctx.info().max_shared_memory && 2 * chunks_each <= row.chunks_in_flight;
    if (want.stages != 2u || !room) want.stages = room ? row.stage_buffers : 1;
    EXPECT_TRUE(s.shared && s.rows == want.rows && s.step == want.step && s.cols == want.cols && s.rm == want.rm &&
                s.rn == want.rn && s.invocations == want.invocations && s.stages == want.stages)
        << "planned " << shape_text(s) << ", expected " << shape_text(want);
  }
}

// --- gmm ----------------------------------------------------------------------------------------------------

struct GmmShapeCase {
  const char* name;
  int64_t m, k, n;
  std::vector<int32_t> sizes;  // empty: routed (m tokens, top_k 2 over 4 experts)
  DType type;                  // lhs, rhs and out
  bool transpose, swiglu_bias;
  std::optional<Tiling> tiling;
  OpShape want;  // the GPU cases: what the plan must choose
};

void PrintTo(const GmmShapeCase& c, std::ostream* os) { *os << c.name; }

// Routed ids for T tokens, top_k 2 over 4 experts: expert 0 takes slot 0 of 3 tokens in 4 (more than
// half a 32-row tile: the tile's later rows are real), slot 1 spreads over 1..3, every 7th slot dropped.
std::vector<int32_t> routed_ids(int64_t T) {
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < T; ++t) {
    ids.push_back(t % 7 == 6 ? -1 : int32_t(t % 4 == 3 ? 3 : 0));
    ids.push_back(t % 7 == 2 ? -1 : int32_t(1 + t % 3));
  }
  return ids;
}

// Runs the case on ctx against the reference; returns the plan's shape.
OpShape expect_gmm_case(Context& ctx, const GmmShapeCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  GmmProblem p;
  p.m = c.m, p.k = c.k, p.n = c.n;
  p.lhs_type = p.rhs_type = p.out_type = c.type;
  p.transpose_rhs = c.transpose;
  if (c.tiling) p.tiling = TilingChoice::of(*c.tiling);
  if (c.swiglu_bias) p.epilogue = {true, Activation::swiglu};
  const bool routed = c.sizes.empty();
  int64_t groups = int64_t(c.sizes.size());
  if (routed) {
    groups = 4;
    p.num_rhs_groups = 4;
    p.routing = {2, false, true, 4};
  } else {
    p.group_sizes = c.sizes;
  }
  const auto lhs = random_values(size_t(c.m * c.k), c.type, rng);
  const auto rhs = random_values(size_t(groups * c.k * c.n), c.type, rng);
  const auto bias = c.swiglu_bias ? random_values(size_t(groups * c.n), DType::f32, rng) : std::vector<float>{};
  const Tolerance tol = tolerance_for(c.type, c.type, c.type);
  if (routed) {
    const std::vector<int32_t> ids = routed_ids(c.m);
    std::vector<float> weights(ids.size());
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.25f + 0.125f * float(i % 5);
    EXPECT_TRUE(all_close(run_gmm_routed(ctx, p, lhs, rhs, ids, weights, {}, bias),
                          reference::gmm_routed(p, lhs, rhs, ids, weights, {}, bias), tol.atol, tol.rtol));
  } else {
    EXPECT_TRUE(all_close(run_gmm(ctx, p, lhs, rhs, {}, bias), reference::gmm(p, lhs, rhs, {}, bias), tol.atol,
                          tol.rtol));
  }
  return op_shape(GmmPlan(ctx, p));
}

// 16-bit operands, k below one step (12) and past it (20): the first step starts before K = 0, its
// packed chunks there masked. n = 24 keeps every load 4 wide (with SwiGLU, out_n = 12 too).
class SharedPackedGmm : public DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SharedPackedGmm, RaggedFirstStepMatchesReference) {
  const DType type = GetParam();
  for (bool texel : {true, false}) {
    Context ctx = shared_context(texel);
    for (int64_t k : {12, 20})
      for (bool transpose : {false, true})
        for (bool swiglu_bias : {false, true}) {
          const GmmShapeCase c{"", 37, k, 24, {9, 0, 17, 11}, type, transpose, swiglu_bias, std::nullopt, {}};
          SCOPED_TRACE(std::string(loads_name(texel)) + ", k = " + std::to_string(k) +
                       (transpose ? ", rhs [n, k]" : ", rhs [k, n]") + (swiglu_bias ? ", swiglu + bias" : ""));
          const OpShape s = expect_gmm_case(ctx, c, uint32_t(k + 2 * transpose + 4 * swiglu_bias));
          EXPECT_TRUE(s.shared) << shape_text(s);
          EXPECT_NE(uint32_t(k) % s.step, 0u) << "the first step must be ragged: " << shape_text(s);
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Packed, SharedPackedGmm, ::testing::Values(DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// gmm planned as on a GPU: the shape it chose, then the reference.
class GpuShapeGmm : public DeviceTest, public ::testing::WithParamInterface<GmmShapeCase> {};

TEST_P(GpuShapeGmm, MatchesReference) {
  const GmmShapeCase& c = GetParam();
  expect_gpu_shape(c.want, [&](Context& ctx) { return expect_gmm_case(ctx, c, 7); });
}

std::vector<GmmShapeCase> gpu_gmm_cases() {
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  // rows, step, cols, rm, rn, invocations, shared
  return {
      // The m tiles of these cases are given: their grids are a fraction of a wave on the planned GPU's 16
      // units, where the automatic tiling takes smaller tiles (gmm_tile_heights.hpp). The rest is the plan's.
      // Groups of a few hundred rows: 128-row tiles, 16 x 16 invocations of 8 x 8, K steps of 16 (40: 2.5).
      {"t128_f32", 300, 40, 72, {256, 44}, f32, false, false, Tiling{128, 16, 128}, {128, 16, 128, 8, 8, 256, true}},
      // The same with rhs [n, k] and k = 37: scalar loads, a ragged first step of 5.
      {"t128_bf16_T_k37", 300, 37, 72, {44, 256}, bf16, true, false, Tiling{128, 16, 128},
       {128, 16, 128, 8, 8, 256, true}},
      // Groups of ~30 rows: 32-row tiles of 8 x 8, 16 invocations (fewer than the rows), K steps of 8.
      {"t32_f16", 120, 20, 24, {31, 29, 30, 30}, f16, false, false, Tiling{32, 16, 128}, {32, 8, 32, 8, 8, 16, true}},
      // SwiGLU (+ bias), rhs [n, k]: 8 x 4 per half, 32 invocations.
      {"t32_bf16_T_swiglu", 120, 20, 48, {31, 29, 30, 30}, bf16, true, true, Tiling{32, 16, 128},
       {32, 8, 32, 8, 4, 32, true}},
      // Routed by expert ids (74 slots, about 19 per expert), combined, on 32-row tiles given explicitly:
      // the automatic routed tiling assumes routers concentrate (2 * top_k / E of the slots per expert,
      // here all 37 tokens) and would take 64 rows.
      {"t32_f16_routed", 37, 28, 24, {}, f16, false, false, Tiling{32, 8, 32}, {32, 8, 32, 8, 8, 16, true}},
      {"t32_f32_T_routed_swiglu", 37, 44, 32, {}, f32, true, true, Tiling{32, 8, 16}, {32, 8, 16, 8, 4, 16, true}},
      // K steps of 8: the 128 x 128 block's 8 KiB stage fits twice in 32 KiB, 2 chunks per invocation. k = 40
      // is 5 steps (the two-buffer loop ends after buffer 0's step), 32 is 4 (after buffer 1's), 37 a ragged
      // first step of 5 and 4 more, 4 one step shrunk to 4. A 128 x 64 block's stages differ in length.
      {"t128_step8_two_buffers_f32", 300, 40, 72, {256, 44}, f32, false, false, Tiling{128, 8, 128},
       {128, 8, 128, 8, 8, 256, true, 2}},
      {"t128x64_step8_two_buffers_f32", 300, 32, 60, {256, 44}, f32, false, false, Tiling{128, 8, 64},
       {128, 8, 64, 8, 8, 128, true, 2}},
      {"t128_step8_two_buffers_bf16_T_k37", 300, 37, 72, {44, 256}, bf16, true, false, Tiling{128, 8, 128},
       {128, 8, 128, 8, 8, 256, true, 2}},
      {"t128_step8_one_step_bf16_T", 300, 4, 72, {44, 256}, bf16, true, false, Tiling{128, 8, 128},
       {128, 4, 128, 8, 8, 256, true, 2}},
      // A 16 x 24 tile: 12 invocations of 4 x 8; the chunks do not split evenly over them.
      {"t16x24_uneven_bf16_T", 50, 36, 24, {20, 30}, bf16, true, false, Tiling{16, 16, 24}, {16, 8, 24, 4, 8, 12, true}},
  };
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuShapeGmm, ::testing::ValuesIn(gpu_gmm_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// --- tgmm ---------------------------------------------------------------------------------------------------

// Groups of 0..3 rows (and a few longer) at unaligned starts; 24 rows in all.
const std::vector<int32_t> kShortGroups = {0, 1, 2, 3, 5, 0, 3, 1, 2, 7};

struct TgmmShapeCase {
  const char* name;
  int64_t k, n;
  std::vector<int32_t> sizes;
  DType type;
  bool lhs_mk;
  OpShape want;
  std::optional<Tiling> tiling = std::nullopt;  // (rows per step, block k, block n); unset: automatic
};

void PrintTo(const TgmmShapeCase& c, std::ostream* os) { *os << c.name; }

OpShape expect_tgmm_case(Context& ctx, const TgmmShapeCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  TgmmProblem p;
  for (int32_t s : c.sizes) p.m += s;
  p.k = c.k, p.n = c.n;
  p.group_sizes = c.sizes;
  p.lhs_type = p.rhs_type = p.out_type = c.type;
  p.lhs_mk = c.lhs_mk;
  if (c.tiling) p.tiling = TilingChoice::of(*c.tiling);
  const auto lhs = random_values(size_t(p.k * p.m), c.type, rng);
  const auto rhs = random_values(size_t(p.m * p.n), c.type, rng);
  const Tolerance tol = tolerance_for(c.type, c.type, c.type);
  EXPECT_TRUE(all_close(run_tgmm(ctx, p, lhs, rhs), reference::tgmm(p, lhs, rhs), tol.atol, tol.rtol));
  return op_shape(TgmmPlan(ctx, p));
}

// k and n multiples of 4: rhs (and lhs [m, k]) read 4 wide, 16-bit chunks packed; groups start anywhere.
class SharedPackedTgmm : public DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SharedPackedTgmm, ShortGroupsMatchReference) {
  const DType type = GetParam();
  for (bool texel : {true, false}) {
    Context ctx = shared_context(texel);
    for (bool lhs_mk : {false, true}) {
      SCOPED_TRACE(std::string(loads_name(texel)) + (lhs_mk ? ", lhs [m, k]" : ", lhs [k, m]"));
      const OpShape s = expect_tgmm_case(ctx, {"", 12, 8, kShortGroups, type, lhs_mk, {}}, 40 + lhs_mk);
      EXPECT_TRUE(s.shared) << shape_text(s);
    }
    // The backward's d_rhs is this tgmm with lhs [m, k] (and its d_lhs a gmm with rhs [n, k]); once, on
    // storage buffers (as a GPU reads them), to keep the compiles few.
    if (texel) continue;
    SCOPED_TRACE("backward");
    std::mt19937 rng(50);
    GmmProblem p;
    p.m = 24, p.k = 12, p.n = 8;
    p.group_sizes = kShortGroups;
    p.lhs_type = p.rhs_type = p.out_type = type;
    const auto lhs = random_values(size_t(p.m * p.k), type, rng);
    const auto rhs = random_values(size_t(kShortGroups.size() * p.k * p.n), type, rng);
    const auto d_out = random_values(size_t(p.m * p.n), type, rng);
    const reference::Gradients got = run_backward(ctx, p, lhs, rhs, d_out);
    const reference::Gradients want = reference::gmm_backward(p, lhs, rhs, d_out);
    const Tolerance tol = tolerance_for(type, type, type);
    EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, tol.atol, tol.rtol)) << "d_lhs";
    EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, tol.atol, tol.rtol)) << "d_rhs";
  }
}

INSTANTIATE_TEST_SUITE_P(Packed, SharedPackedTgmm, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// lhs [k, m] at any element offset: the shared schedule reads it 4 elements at a time but never as one
// vec4 (VEC4_LHS is unused there), so an unaligned offset runs the planned pipeline, not one of its own.
TEST_F(DeviceTest, SharedTgmmLhsKmAtAnyOffset) {
  for (bool texel : {true, false}) {
    SCOPED_TRACE(loads_name(texel));
    Context ctx = shared_context(texel);
    std::mt19937 rng(60);
    TgmmProblem p;
    p.m = 24, p.k = 12, p.n = 8;
    p.group_sizes = kShortGroups;
    const auto lhs = random_values(size_t(p.k * p.m), DType::f32, rng);
    const auto rhs = random_values(size_t(p.m * p.n), DType::f32, rng);
    const std::vector<float> want = reference::tgmm(p, lhs, rhs);
    Buffer r = ctx.create_buffer(rhs.size() * 4), o = ctx.create_buffer(want.size() * 4);
    r.upload(rhs.data(), rhs.size() * 4);
    size_t pipelines = 0;
    for (size_t lo : {0, 1, 2}) {
      Buffer l = ctx.create_buffer((lo + lhs.size() + 4) * 4);  // whole texels past the operand (texel views)
      l.upload(lhs.data(), lhs.size() * 4, lo * 4);
      tgmm(ctx, p, {l.view(lo * 4, lhs.size() * 4), r.view(), o.view(), {}});
      std::vector<float> got(want.size());
      o.download(got.data(), got.size() * 4);
      EXPECT_TRUE(all_close(got, want, 1e-3, 1e-5)) << "lhs offset " << lo;
      EXPECT_EQ(TgmmPlan(ctx, p).texel_loads({l.view(lo * 4, lhs.size() * 4), r.view(), o.view(), {}}),
                texel && reads_texel_views(ctx));
      const size_t made = ContextInternals::of(ctx).pipelines.size();
      if (lo == 0) pipelines = made;
      EXPECT_EQ(made, pipelines) << "lhs offset " << lo << " compiled a pipeline of its own";
    }
  }
}

class GpuShapeTgmm : public DeviceTest, public ::testing::WithParamInterface<TgmmShapeCase> {};

TEST_P(GpuShapeTgmm, MatchesReference) {
  const TgmmShapeCase& c = GetParam();
  expect_gpu_shape(c.want, [&](Context& ctx) { return expect_tgmm_case(ctx, c, 9); });
}

std::vector<TgmmShapeCase> gpu_tgmm_cases() {
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  const std::vector<int32_t> longer = {0, 1, 2, 3, 5, 40, 0, 49};  // 100 rows
  // tgmm's block is [k, n]: rows are k, the step walks the group's rows.
  return {
      {"t128_f32_lhs_km", 72, 72, longer, f32, false, {128, 16, 128, 8, 8, 256, true}},
      {"t128_f16_lhs_mk", 72, 20, longer, f16, true, {128, 8, 32, 8, 8, 64, true}},
      {"t32_bf16_lhs_mk", 24, 24, kShortGroups, bf16, true, {32, 8, 32, 8, 8, 16, true}},
      {"t32_f32_scalar", 21, 23, kShortGroups, f32, false, {32, 8, 32, 8, 8, 16, true}},
      // Steps of 8 rows: the 128 x 128 block's 8 KiB stage fits twice in 32 KiB, 2 chunks per invocation.
      // Groups of 1 to 49 rows (one step to 7, ragged first steps) and of 16 and 32 (2 and 4 steps).
      {"t128_step8_two_buffers_f32", 72, 72, longer, f32, false, {128, 8, 128, 8, 8, 256, true, 2},
       Tiling{8, 128, 128}},
      {"t128_step8_two_buffers_f16_lhs_mk", 72, 72, {0, 16, 3, 32, 40, 0, 9}, f16, true,
       {128, 8, 128, 8, 8, 256, true, 2}, Tiling{8, 128, 128}},
  };
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuShapeTgmm, ::testing::ValuesIn(gpu_tgmm_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace vkgmm::test
