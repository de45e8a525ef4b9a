// gmm's GPU decode schedule (tiling.hpp, gmm_schedule): groups of a few rows on a GPU take the direct
// schedule with the reduction over K split across slices of the workgroup, summed in shared memory before
// the epilogue and the store (shaders/gmm.comp, K_SLICES). Planned on this device as for a discrete GPU
// (tiling_device.hpp) and run here, against vkgmm::reference: every load path (4-element and scalar, rhs
// [k, n] and [n, k], 16-bit types, every block format), the fill visits of rows outside the active
// groups, existing_out, device group sizes, and routing by ids with SwiGLU, bias and the fused combine.
// Each case checks that the plan took K slices, and over rhs [n, k] (slices across neighbouring lanes)
// that it runs the build summing them with subgroup shuffles exactly where the device shuffles in
// compute shaders.
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "context_impl.hpp"
#include "device_class.hpp"
#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"
#include "tiling.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"

namespace vkgmm::test {
namespace {

// A context of the test's own planning as a discrete GPU (a register file of 8 x 8 tiles, 16 compute
// units, subgroups of 32), reading storage buffers as a GPU does, or vkgmm's buffers through texel views.
Context gpu_context(bool texel = false, ContextOptions o = {}) {
  o.texel_loads = texel;
  Context c = DeviceTest::make_context(o);
  ContextInternals::of(c).tiling_device.as = discrete_gpu_like(c.info(), 512, 16, 32);
  return c;
}

// The plan's op pipeline's K slices and invocations (0, 0 when it has none), and its module's name.
struct Slices {
  uint32_t slices = 0, invocations = 0;
  bool direct = false;
  std::string module;
};
Slices slices_of(const GmmPlan& plan) {
  for (const PlannedPipeline& p : PlanInternals::pipelines(plan)) {
    if (std::string(p.role) != "op") continue;
    Slices s{p.constants[VKGMM_ID_GMM_K_SLICES], p.constants[VKGMM_ID_INVOCATIONS],
             p.constants[VKGMM_ID_USE_SHARED] == 0, ""};
    for (const EmbeddedModule& m : embedded_op_modules())
      if (m.code.code == p.code.code) s.module = m.name;
    return s;
  }
  return {};
}

bool shuffles(const Context& c) {
  const VkSubgroupFeatureFlags both = VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT;
  return (ContextInternals::of(c).dev.compute_subgroup_operations & both) == both;
}

// Expects the plan for p on c to be the sliced direct schedule, its slices summed by subgroup shuffles
// where they lie across lanes (rhs [n, k]) and the device shuffles (not in the texel builds).
void expect_sliced(Context& c, const GmmProblem& p) {
  const Slices s = slices_of(GmmPlan(c, p));
  EXPECT_TRUE(s.direct) << "the shared schedule was planned";
  EXPECT_GT(s.slices, 1u) << "no K slices";
  EXPECT_EQ(s.invocations % s.slices, 0u);
  // The texel builds (CPU drivers' reads) keep the shared tree.
  const bool sg = s.module.size() > 3 && s.module.compare(s.module.size() - 3, 3, "_sg") == 0;
  const bool texel = s.module.find("texel") != std::string::npos;
  EXPECT_EQ(sg, p.transpose_rhs && shuffles(c) && !texel) << "module " << s.module;
}

struct DecodeCase {
  const char* name;
  int64_t k, n;
  DType lhs, rhs, out;
  bool transpose;
};

void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

class GpuDecode : public DeviceTest, public ::testing::WithParamInterface<DecodeCase> {};

// The case's problem of m rows in these groups (host sizes).
GmmProblem decode_problem(const DecodeCase& c, int64_t m, std::vector<int32_t> group_sizes) {
  GmmProblem p;
  p.m = m, p.k = c.k, p.n = c.n;
  p.lhs_type = c.lhs, p.rhs_type = c.rhs, p.out_type = c.out;
  p.transpose_rhs = c.transpose;
  p.group_sizes = std::move(group_sizes);
  return p;
}

// 16 rows over 6 groups of 0-4 rows (the last row in none), window of groups 1..4, existing_out.
TEST_P(GpuDecode, HostSizesWithAWindowAndExistingOut) {
  const DecodeCase& c = GetParam();
  for (bool texel : {false, true}) {
    SCOPED_TRACE(texel ? "texel views" : "storage buffers");
    Context cx = gpu_context(texel);
    std::mt19937 rng(41);
    GmmProblem p = decode_problem(c, 16, {3, 4, 0, 2, 4, 2});
    p.group_offset = 1;
    p.num_rhs_groups = 4;
    p.existing_out = true;
    expect_sliced(cx, p);
    const auto lhs = random_values(size_t(p.m * p.k), c.lhs, rng);
    const auto rhs = random_values(size_t(4 * p.k * p.n), c.rhs, rng);
    const auto ex = random_values(size_t(p.m * p.n), c.out, rng);
    const Tolerance tol = tolerance_for(c.lhs, c.rhs, c.out);
    EXPECT_TRUE(all_close(run_gmm(cx, p, lhs, rhs, ex), reference::gmm(p, lhs, rhs, ex), tol.atol, tol.rtol));
  }
}

// The same rows with their sizes on the device (both grids), no window.
TEST_P(GpuDecode, DeviceSizes) {
  const DecodeCase& c = GetParam();
  Context cx = gpu_context();
  std::mt19937 rng(42);
  // run_gmm_device uploads the sizes; the plan expects 16 / 6 rows each.
  const GmmProblem p = decode_problem(c, 16, {3, 4, 0, 2, 4, 2});
  const auto lhs = random_values(size_t(p.m * p.k), c.lhs, rng);
  const auto rhs = random_values(size_t(6 * p.k * p.n), c.rhs, rng);
  const Tolerance tol = tolerance_for(c.lhs, c.rhs, c.out);
  EXPECT_TRUE(all_close(run_gmm_device(cx, p, lhs, rhs), reference::gmm(p, lhs, rhs), tol.atol, tol.rtol));
}

// A split reduction gives the same bits on every run: the shuffles' butterfly and the shared round add
// in a fixed order. Three runs of one plan (over rhs [n, k] the shuffled build, where the device has
// one), compared bit for bit, and the first against the reference.
TEST_P(GpuDecode, SameBitsOnEveryRun) {
  const DecodeCase& c = GetParam();
  Context cx = gpu_context();
  std::mt19937 rng(45);
  const GmmProblem p = decode_problem(c, 3, {1, 2});
  expect_sliced(cx, p);
  const auto lhs = random_values(size_t(p.m * p.k), c.lhs, rng);
  const auto rhs = random_values(size_t(2 * p.k * p.n), c.rhs, rng);
  const auto first = run_gmm(cx, p, lhs, rhs);
  for (int run = 0; run < 2; ++run) {
    const auto again = run_gmm(cx, p, lhs, rhs);
    ASSERT_EQ(again.size(), first.size());
    EXPECT_EQ(0, std::memcmp(again.data(), first.data(), first.size() * sizeof(first[0]))) << "run " << run + 1;
  }
  const Tolerance tol = tolerance_for(c.lhs, c.rhs, c.out);
  EXPECT_TRUE(all_close(first, reference::gmm(p, lhs, rhs), tol.atol, tol.rtol));
}

// One token and four routed by ids (top-4 of 8 experts, one slot dropped), SwiGLU over [gate | up] with
// bias, per slot and combined in token order (the fused combine).
TEST_P(GpuDecode, RoutedSwigluBias) {
  const DecodeCase& c = GetParam();
  if (is_quantized(c.rhs) && !c.transpose) GTEST_SKIP() << "blocks along n: covered by the host-size case";
  Context cx = gpu_context();
  for (int64_t T : {1, 4})
    for (bool combine : {false, true}) {
      SCOPED_TRACE("T " + std::to_string(T) + (combine ? " combined" : " per slot"));
      std::mt19937 rng(43);
      GmmProblem p;
      p.m = T, p.k = c.k, p.n = 2 * c.n;
      p.lhs_type = c.lhs, p.rhs_type = c.rhs, p.out_type = c.out;
      p.transpose_rhs = c.transpose;
      p.num_rhs_groups = 8;
      p.routing = {4, false, combine, 8};
      p.epilogue = {true, Activation::swiglu};
      std::vector<int32_t> ids;
      for (int64_t t = 0; t < T; ++t)
        for (int32_t j = 0; j < 4; ++j) ids.push_back(t == 0 && j == 2 ? -1 : int32_t((3 * t + 2 * j) % 8));
      std::vector<float> weights;
      if (combine) weights = random_values(ids.size(), DType::f32, rng);
      expect_sliced(cx, p);
      const auto lhs = random_values(size_t(p.m * p.k), c.lhs, rng);
      const auto rhs = random_values(size_t(8 * p.k * p.n), c.rhs, rng);
      const auto bias = random_values(size_t(8 * p.n), DType::f32, rng);
      const Tolerance tol = tolerance_for(c.lhs, c.rhs, c.out);
      EXPECT_TRUE(all_close(run_gmm_routed(cx, p, lhs, rhs, ids, weights, {}, bias),
                            reference::gmm_routed(p, lhs, rhs, ids, weights, {}, bias), tol.atol, tol.rtol));
    }
}

// k: many steps per slice (4-element loads), odd (scalar loads), one block or several of a block format
// (its steps lie in whole blocks; q4_K's super-blocks of 256 each reread per step; q4_0, mxfp4, iq4_xs and
// q5_1 two steps in flight, iq4_xs's second step in its first's super-block, q5_1's iterations 3, an odd
// count for the slices); n: one 32-column tile or several with a ragged last one.
std::vector<DecodeCase> decode_cases() {
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  return {
      {"f32_kn", 512, 72, f32, f32, f32, false},
      {"f32_nk", 512, 72, f32, f32, f32, true},
      {"f32_k37_scalar", 37, 40, f32, f32, f32, false},
      {"f32_nk_k37_scalar", 37, 40, f32, f32, f32, true},
      {"bf16_kn", 256, 64, bf16, bf16, bf16, false},
      {"f16_nk", 256, 36, f16, f16, f16, true},
      {"f16_nk_k52", 52, 36, f16, f16, f16, true},
      {"q8_0_nk", 256, 40, f32, DType::q8_0, f32, true},
      {"q4_0_nk_f16", 256, 40, f16, DType::q4_0, f32, true},
      {"q4_K_nk", 512, 33, f32, DType::q4_K, f32, true},
      {"q6_K_nk_bf16", 256, 33, bf16, DType::q6_K, f32, true},
      {"mxfp4_nk", 128, 33, f32, DType::mxfp4, f32, true},
      {"iq4_xs_nk", 512, 33, f32, DType::iq4_xs, f32, true},
      {"q5_1_nk_k192", 192, 40, f32, DType::q5_1, f32, true},
      {"q2_K_nk", 512, 33, f32, DType::q2_K, f32, true},
      {"q3_K_nk_f16", 256, 40, f16, DType::q3_K, f32, true},
      {"q8_0_kn", 64, 64, f32, DType::q8_0, f32, false},
  };
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuDecode, ::testing::ValuesIn(decode_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& info) { return std::string(info.param.name); });

// Device group sizes that break the contract, on the sliced decode tiles: read in the kernel (a call of a
// few rows, no workspace) and through the metadata build on both grids, each taken as documented (the
// host path's bits on the sizes as the device takes them, the same tiles and K slices; the status word's
// bits), over rhs [n, k] and [k, n], existing_out, a window, every view between guard regions.
TEST_F(DeviceTest, GpuDecodeTakesHostileDeviceSizes) {
  Context cx = gpu_context();
  const std::vector<std::vector<int32_t>> hostile = {
      {3, -2, 9, 4, 0, 7}, {INT32_MAX, 1, 0, -1, 2, 2}, {2, 2, INT32_MIN, 5, 30, 1}};
  for (int path = 0; path < 3; ++path)
    for (const std::vector<int32_t>& sizes : hostile) {
      const bool transpose = sizes[0] != 3;
      SCOPED_TRACE("path " + std::to_string(path) + ", sizes " + std::to_string(sizes[0]) + ", " +
                   std::to_string(sizes[1]) + ", ..." + (transpose ? " [n, k]" : " [k, n]"));
      const GridHook grid(cx, path == 1 ? DeviceGrid::upper_bound : DeviceGrid::indirect);
      const SizesInKernelHook in_kernel(cx, path == 2);
      GmmProblem dev = decode_problem({"", 128, 40, DType::f32, DType::f32, DType::f32, transpose}, 16, {});
      dev.device_group_sizes.count = 6;
      dev.group_offset = 1, dev.num_rhs_groups = 4, dev.existing_out = true;
      const GmmPlan plan(cx, dev);
      const Slices slices = slices_of(plan);
      EXPECT_TRUE(slices.direct);
      EXPECT_GT(slices.slices, 1u);
      EXPECT_EQ(plan.workspace_bytes() == 0, path == 2) << "the sizes read in the kernel, or the build's";
      GmmProblem host = dev;
      uint32_t want_status = 0;
      host.group_sizes = sizes_taken(sizes, host.m, want_status);
      host.device_group_sizes = {};
      host.tiling = TilingChoice::of(plan.tiling()), host.schedule = plan.schedule();
      EXPECT_EQ(slices_of(GmmPlan(cx, host)).slices, slices.slices);
      std::mt19937 rng(48);
      const auto lhs = random_values(size_t(host.m * host.k), DType::f32, rng);
      const auto rhs = random_values(size_t(4 * host.k * host.n), DType::f32, rng);
      const auto ex = random_values(size_t(host.m * host.n), DType::f32, rng);
      const std::vector<float> want = run_gmm(cx, host, lhs, rhs, ex);
      Guarded l = guarded_floats(cx, lhs), r = guarded_floats(cx, rhs), e = guarded_floats(cx, ex);
      Guarded o(cx, want.size() * 4), s(cx, sizes.size() * 4), status(cx, 4);
      std::optional<Guarded> work;
      if (path != 2) work.emplace(cx, plan.workspace_bytes());
      s.set(sizes.data(), sizes.size() * 4);
      const BufferView work_view = work ? work->view() : BufferView{};
      cx.submit_and_wait([&](VkCommandBuffer cb) {
        plan.record(cb, {l.view(), r.view(), o.view(), e.view(), s.view(), work_view, status.view()});
      });
      EXPECT_TRUE(same_bits(floats(o), want));
      uint32_t got_status = ~0u;
      std::memcpy(&got_status, status.get().data(), 4);
      EXPECT_EQ(got_status, want_status);
      for (const Guarded* g : {&l, &r, &e, &o, &s, &status}) EXPECT_TRUE(g->guards_intact());
      if (work) EXPECT_TRUE(work->guards_intact());
    }
}

// The sliced decode issues several steps of its K walk at once, so that each invocation has 128 bytes of
// weights in flight per iteration (kDecodeBytesInFlight): STEPS_IN_FLIGHT steps (an element type's quads,
// a block format's walk steps along [n, k] rows) of its RN columns (twice with a gated activation), within
// the device class's decode_load_floats registers and k a multiple of the iteration, each slice taking
// whole iterations and at least 2 steps; the results as the reference's (the GpuDecode cases run such
// plans too).
TEST_F(DeviceTest, GpuDecodeKeepsItsBytesInFlight) {
  Context cx = gpu_context();
  struct Case {
    DType lhs, rhs;
    bool transpose, gated;
    int64_t k;
    uint32_t steps;  // expected
    bool full;       // the iteration's weights reach the 128 bytes
  };
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  // 4 columns per invocation, 2 rows. Element types: a quad is 64 bytes of f32 weights, 32 of 16 bits,
  // 128 gated; k = 52 is not a multiple of 2 quads, 56 of 2 and not 4, 32 of 4 (2 slices of one iteration
  // each). Block formats: a step is 72 bytes of q4_0 and iq4_nl, 80 of q4_1, 88 of q5_0, 96 of q5_1, 68 of
  // iq4_xs and mxfp4 (two steps in flight); 136 of q8_0 and 144 of q4_K and of q4_0 gated (one); q6_K's (105)
  // holds more registers than two steps may (its quant words and high bits, 20 per column); q2_K's is a
  // half super-block (four 32-value parts from the same quant words, 168 bytes), one in flight, each slice
  // one such step; k = 160 is not a multiple of two q4_0 steps.
  const Case cases[] = {
      {f32, f32, true, false, 512, 2, true},          {f32, f32, false, false, 512, 2, true},
      {f16, f16, true, false, 1024, 4, true},         {bf16, bf16, false, false, 1024, 4, true},
      {f32, f32, true, true, 512, 1, true},           {f16, f16, true, false, 52, 1, false},
      {f16, f16, true, false, 56, 2, false},          {f16, f16, true, false, 32, 4, true},
      {f32, DType::q4_0, true, false, 1024, 2, true}, {f16, DType::q5_1, true, false, 512, 2, true},
      {f32, DType::iq4_xs, true, false, 512, 2, true}, {f32, DType::mxfp4, true, false, 512, 2, true},
      {f32, DType::q8_0, true, false, 512, 1, true},  {f32, DType::q4_K, true, false, 512, 1, true},
      {f32, DType::q4_0, true, true, 512, 1, true},   {f32, DType::q6_K, true, false, 512, 1, false},
      {f32, DType::q2_K, true, false, 512, 1, true}, {f32, DType::q4_0, true, false, 160, 1, false},
      {f32, DType::q4_1, true, false, 256, 2, true},  {bf16, DType::q5_0, true, false, 256, 2, true},
      {f32, DType::iq4_nl, true, false, 256, 2, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.rhs)) + (c.transpose ? " [n, k]" : " [k, n]") + (c.gated ? " gated" : "") +
                 " k " + std::to_string(c.k));
    const bool blocks = is_quantized(c.rhs);
    GmmProblem p;
    p.m = 3, p.k = c.k, p.n = c.gated ? 128 : 64;
    p.lhs_type = c.lhs, p.rhs_type = c.rhs, p.out_type = blocks ? DType::f32 : c.rhs;
    p.transpose_rhs = c.transpose;
    p.group_sizes = {1, 2};
    if (c.gated) {
      p.num_rhs_groups = 2;
      p.epilogue = {false, Activation::swiglu};
    }
    // A step's values and one column's bytes of weights in it: an element type's quad, q4_K's walk 64
    // values, q2_K's 128 (its wide step: the shader takes it under 16 rows, with one in flight), the others
    // here 32.
    const KWalkStep walk = k_walk_step(c.rhs, c.transpose, true);
    const uint32_t values = walk.values;
    EXPECT_EQ(values, !blocks ? 4u : c.rhs == DType::q4_K ? 64u : c.rhs == DType::q2_K ? 128u : 32u);
    const double column_bytes = double(values) * double(block_bytes(c.rhs)) / double(block_elements(c.rhs));
    const GmmPlan plan(cx, p);
    bool planned = false;
    for (const PlannedPipeline& pp : PlanInternals::pipelines(plan)) {
      if (std::string(pp.role) != "op") continue;
      planned = true;
      const uint32_t steps = pp.constants[VKGMM_ID_GMM_STEPS_IN_FLIGHT], rn = pp.constants[VKGMM_ID_COLS_PER_INV];
      const uint32_t rm = pp.constants[VKGMM_ID_ROWS_PER_INV], slices = pp.constants[VKGMM_ID_GMM_K_SLICES];
      const uint32_t halves = c.gated ? 2 : 1;
      ASSERT_GT(slices, 1u) << "not the sliced decode";
      ASSERT_EQ(rm, 2u);
      ASSERT_EQ(rn, 4u);
      EXPECT_EQ(steps, c.steps);
      EXPECT_EQ(c.k % (values * steps), 0);
      if (c.rhs == DType::q2_K) EXPECT_LT(rm, 16u) << "a wide step the shader would not take";
      EXPECT_LE(slices * std::max(values * steps, walk.least_slice_values), uint32_t(c.k))
          << "a slice under its least values";
      const double bytes = steps * rn * halves * column_bytes;
      if (c.full) EXPECT_GE(bytes, double(kDecodeBytesInFlight)) << "steps " << steps;
      // An element type's step holds its quad of lhs and rhs values.
      const uint32_t most = device_class(*ContextInternals::of(cx).tiling_device.as).decode_load_floats;
      if (!blocks) EXPECT_TRUE(steps == 1 || 4 * steps * (rm + rn * halves) <= most) << "steps " << steps;
    }
    if (!planned) ADD_FAILURE() << "the plan has no op pipeline";
    std::mt19937 rng(47);
    const auto lhs = random_values(size_t(p.m * p.k), c.lhs, rng);
    const auto rhs = random_values(size_t(2 * p.k * p.n), c.rhs, rng);
    const Tolerance tol = tolerance_for(c.lhs, c.rhs, p.out_type);
    EXPECT_TRUE(all_close(run_gmm(cx, p, lhs, rhs), reference::gmm(p, lhs, rhs), tol.atol, tol.rtol));
  }
}

// The routing build's order: the local experts' slots, expert by expert, then every other slot, each in
// slot order, and the experts' sizes. Where the slots are at most the build's invocations, each places
// its own (routing.glsl's route_few_slots, no counts); past that they are counted and scanned, on a GPU in
// shared memory where the counts fit (8 local experts) and in the workspace where they do not (20 experts
// past this device's shared memory), and on this device as it plans itself (a CPU: the workspace). The
// words the build leaves in the app's workspace against the order computed here, and the results against
// the reference, with ids outside the window, -1 and a window offset.
TEST_F(DeviceTest, GpuRoutingOrdersTheSlotsOnEveryPath) {
  for (bool gpu : {true, false}) {
    Context cx = gpu ? gpu_context() : make_context({});
    ContextInternals::of(cx).dev.options.route_in_kernel = false;  // the build, whatever $VKGMM_ROUTE_IN_KERNEL says
    // How the device plans itself (the second pass): as a GPU too, unless it is a CPU driver.
    const Context::Impl& im = ContextInternals::of(cx);
    const bool planned_as_gpu = im.tiling_device.of(cx.info()).type != VK_PHYSICAL_DEVICE_TYPE_CPU;
    // The most local experts whose counts fit beside the build's words, and 20 more.
    const int64_t fit = int64_t((cx.info().max_shared_memory - 1024) / 4 / VKGMM_METADATA_INVOCATIONS) - 2;
    for (int64_t tokens : {5, 12})  // 15 slots, 36: fewer and more than the build's invocations
      for (int64_t experts : {int64_t(8), fit + 20}) {
        SCOPED_TRACE(std::string(planned_as_gpu ? "planned as a GPU, " : "") + std::to_string(tokens) + " tokens, " +
                     std::to_string(experts) + " local experts");
        std::mt19937 rng(44);
        GmmProblem p;
        p.m = tokens, p.k = 64, p.n = 40;
        p.num_rhs_groups = experts;
        p.group_offset = 2;
        p.routing = {3, false, true, experts + 4};
        const int64_t slots = p.m * 3;
        std::vector<int32_t> ids;
        for (int64_t t = 0; t < p.m; ++t)
          for (int32_t j = 0; j < 3; ++j)
            ids.push_back(j == 1 && t == 3 ? -1 : int32_t((7 * t + 5 * j) % (experts + 4)));
        const GmmPlan plan(cx, p);
        uint32_t shared_words = ~0u;
        for (const PlannedPipeline& x : PlanInternals::pipelines(plan))
          if (std::string(x.role) == "metadata") shared_words = x.constants[VKGMM_ID_META_ROUTE_SHARED_COUNTS];
        const uint64_t words = uint64_t(VKGMM_METADATA_INVOCATIONS) * (experts + 1);
        const bool counted = slots > VKGMM_METADATA_INVOCATIONS;
        const bool fits = (words + 1) * 4 + 1024 <= cx.info().max_shared_memory;
        EXPECT_EQ(shared_words, planned_as_gpu && counted && fits ? words : 0u);
        EXPECT_EQ(fits, experts == 8);

        const auto weights = random_values(ids.size(), DType::f32, rng);
        const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
        const auto rhs = random_values(size_t(experts * p.k * p.n), DType::f32, rng);
        Guarded l = guarded_floats(cx, lhs), w = guarded_floats(cx, rhs), wt = guarded_floats(cx, weights),
                o(cx, gmm_out_elements(p) * 4), id(cx, ids.size() * 4), work(cx, plan.workspace_bytes());
        id.set(ids.data(), ids.size() * 4);
        GmmOperands ops{l.view(), w.view(), o.view()};
        ops.ids = id.view(), ops.weights = wt.view(), ops.workspace = work.view();
        cx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
        EXPECT_TRUE(all_close(floats(o), reference::gmm_routed(p, lhs, rhs, ids, weights), 1e-3, 1e-5));

        // The order computed here: each slot's bucket (its local expert, or `experts` for the rest).
        std::vector<int32_t> sizes(size_t(experts), 0), map;
        std::vector<int64_t> bucket(ids.size());
        for (int64_t s = 0; s < slots; ++s) {
          const int64_t e = ids[size_t(s)] - p.group_offset;
          bucket[size_t(s)] = ids[size_t(s)] >= 0 && e >= 0 && e < experts ? e : experts;
          if (bucket[size_t(s)] < experts) ++sizes[size_t(e)];
        }
        for (int64_t b = 0; b <= experts; ++b)
          for (int64_t s = 0; s < slots; ++s)
            if (bucket[size_t(s)] == b) map.push_back(int32_t(s));
        const RoutingSource built = PlanInternals::routing_source(plan, work.view());
        const std::vector<uint8_t> bytes = work.get();
        std::vector<int32_t> got_sizes(sizes.size()), got_map(map.size());
        std::memcpy(got_sizes.data(), bytes.data() + built.sizes * 4, got_sizes.size() * 4);
        std::memcpy(got_map.data(), bytes.data() + built.map * 4, got_map.size() * 4);
        EXPECT_EQ(got_sizes, sizes);
        EXPECT_EQ(got_map, map);
        for (const Guarded* g : {&l, &w, &wt, &o, &id, &work}) EXPECT_TRUE(g->guards_intact());
      }
  }
}

// Fill visits of long stretches of rows outside the active groups, spread over the K slices (each slice
// its own TM-row blocks), on the packed 16-bit path (no 16-bit storage: an element's half of a word
// changed by one atomicXor) and with 16-bit storage, existing_out the very range of out, 16-bit and f32
// outs, on the per-visit grid and the persistent one (its loop over work items around the slices'
// barriers). (Slices writing a row twice would still pass here: the second write, of the same value,
// reads the first's bits; only writes racing on a GPU would flip them.)
TEST_F(DeviceTest, GpuDecodeFillsLongStretchesOnce) {
  for (bool storage16 : {false, true})
    for (Grid grid : {Grid::per_visit, Grid::persistent}) {
      SCOPED_TRACE(std::string(storage16 ? "16-bit storage" : "packed") +
                   (grid == Grid::persistent ? ", persistent grid" : ""));
      ContextOptions o;
      o.storage16 = storage16;
      o.grid = grid;
      Context cx = gpu_context(false, o);
      for (DType out : {DType::bf16, DType::f32}) {
        std::mt19937 rng(45);
        GmmProblem p;
        p.m = 300, p.k = 256, p.n = 36;
        p.out_type = out;
        p.group_sizes = {2, 3, 1, 2, 292};  // the window holds groups 1..3: 294 rows to fill
        p.group_offset = 1;
        p.num_rhs_groups = 3;
        p.existing_out = true;
        expect_sliced(cx, p);
        const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
        const auto rhs = random_values(size_t(3 * p.k * p.n), DType::f32, rng);
        const auto ex = random_values(size_t(p.m * p.n), out, rng);
        const auto want = reference::gmm(p, lhs, rhs, ex);
        Buffer l = cx.create_buffer(lhs.size() * 4), r = cx.create_buffer(rhs.size() * 4),
               o_buf = cx.create_buffer(ex.size() * dtype_size(out));
        l.upload(lhs.data(), lhs.size() * 4);
        r.upload(rhs.data(), rhs.size() * 4);
        const std::vector<uint8_t> ex_bytes = encode(out, ex);
        o_buf.upload(ex_bytes.data(), ex_bytes.size());
        const GmmPlan plan(cx, p);
        cx.submit_and_wait([&](VkCommandBuffer cb) {
          plan.record(cb, {l.view(), r.view(), o_buf.view(), o_buf.view()});
        });
        std::vector<uint8_t> got(ex_bytes.size());
        o_buf.download(got.data(), got.size());
        const Tolerance tol = tolerance_for(DType::f32, DType::f32, out);
        EXPECT_TRUE(all_close(decode(out, got.data(), ex.size()), want, tol.atol, tol.rtol)) << dtype_name(out);
      }
    }
}

// Where the groups are not a few rows each (prefill) the GPU keeps the shared schedule; so does a decode
// whose tiling, or schedule, the caller chose.
TEST_F(DeviceTest, GpuDecodeOnlyWhereTheGroupsAreAFewRows) {
  Context cx = gpu_context();
  GmmProblem p;
  p.m = 512, p.k = 64, p.n = 64;
  p.group_sizes = {200, 0, 312};
  EXPECT_FALSE(slices_of(GmmPlan(cx, p)).direct);
  p.m = 12;
  p.group_sizes = {5, 0, 7};
  EXPECT_TRUE(slices_of(GmmPlan(cx, p)).direct);
  p.tiling = TilingChoice::of(Tiling{16, 16, 64});
  EXPECT_FALSE(slices_of(GmmPlan(cx, p)).direct);
  p.tiling = TilingChoice::automatic();
  p.schedule = Schedule::shared;
  EXPECT_FALSE(slices_of(GmmPlan(cx, p)).direct);
  // A CPU device planning as itself never slices K.
  p.schedule = Schedule::direct;
  if (ctx().info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) EXPECT_EQ(slices_of(GmmPlan(ctx(), p)).slices, 1u);
}

}  // namespace
}  // namespace vkgmm::test
