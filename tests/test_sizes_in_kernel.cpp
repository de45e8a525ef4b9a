// A gmm of few rows with its group sizes on the device reads them in the kernel (SIZES_IN_KERNEL,
// interface.h): one dispatch, no metadata build and no workspace, the build's bits with the same tiles.
// run_gmm_device runs every device-size problem of the suite on this path too where the plan takes it;
// here: which plans take it, and the cases that exercise its walk (windows and the fill stretches on
// both sides, a skewed group walking several tiles, the epilogues, block-format weights), on lavapipe's
// own tiles and on a GPU's decode tiles (K slices), against the host path's bits and the reference.
#include <cstring>

#include "context_impl.hpp"
#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"

namespace vkgmm::test {
namespace {

// The plan `host` makes with its sizes on the device (count of them, none on the host).
GmmPlan device_plan(Context& c, GmmProblem host) {
  host.device_group_sizes.count = int64_t(host.group_sizes.size());
  host.group_sizes.clear();
  return GmmPlan(c, host);
}

bool reads_sizes_in_kernel(const GmmPlan& plan) {
  const std::vector<PlannedPipeline> pipes = PlanInternals::pipelines(plan);
  return pipes.size() == 1 && pipes[0].constants[VKGMM_ID_GMM_SIZES_IN_KERNEL] == 1u && plan.workspace_bytes() == 0;
}

struct Case {
  const char* name;
  GmmProblem p;
};

// At most 8 rows per group on average: a decode, which a GPU's plan runs on the direct schedule too.
std::vector<Case> cases() {
  std::vector<Case> list;
  auto add = [&](const char* name, int64_t m, int64_t k, int64_t n, std::vector<int32_t> sizes) -> GmmProblem& {
    GmmProblem p;
    p.m = m, p.k = k, p.n = n;
    p.group_sizes = std::move(sizes);
    return list.push_back({name, p}), list.back().p;
  };
  add("decode", 16, 64, 40, {2, 2, 0, 3, 2, 1, 4, 2});
  {
    // Rows below the window's groups, in it (an empty one too) and above it: both fill stretches.
    GmmProblem& p = add("window", 40, 48, 36, {5, 0, 7, 3, 9, 4});
    p.group_offset = 2, p.num_rhs_groups = 3;
    p.existing_out = true;
  }
  {
    GmmProblem& p = add("window_no_existing", 40, 48, 36, {5, 0, 7, 3, 9, 4});
    p.group_offset = 1, p.num_rhs_groups = 4;
  }
  add("rows_past_the_groups", 30, 32, 24, {4, 6, 3, 0, 2});
  // One group holds every row: its workgroup walks its tiles in turn.
  add("skewed", 64, 40, 28, {0, 64, 0, 0, 0, 0, 0, 0});
  {
    GmmProblem& p = add("swiglu_bias_bf16", 24, 64, 32, {6, 10, 0, 8});
    p.epilogue.activation = Activation::swiglu;
    p.epilogue.bias = true;
    p.out_type = DType::bf16;
    p.existing_out = true;
  }
  {
    GmmProblem& p = add("q8_0_nk", 12, 64, 48, {3, 5, 4});
    p.rhs_type = DType::q8_0;
    p.transpose_rhs = true;
  }
  add("one_row", 1, 16, 8, {0, 1});
  return list;
}

void expect_the_builds_bits(Context& c, const Case& t) {
  SCOPED_TRACE(t.name);
  const GmmProblem& p = t.p;
  ASSERT_TRUE(reads_sizes_in_kernel(device_plan(c, p)));
  std::mt19937 rng(11);
  const size_t g_local = size_t(p.num_rhs_groups >= 0 ? p.num_rhs_groups : int64_t(p.group_sizes.size()) - p.group_offset);
  const int64_t out_n = reference::out_columns(p);
  const auto lhs = random_values(size_t(p.m) * p.k, p.lhs_type, rng);
  const auto rhs = random_values(g_local * p.k * p.n, p.rhs_type, rng);
  const auto ex = p.existing_out ? random_values(size_t(p.m) * out_n, p.out_type, rng) : std::vector<float>{};
  const auto bias = p.epilogue.bias ? random_values(g_local * p.n, DType::f32, rng) : std::vector<float>{};
  // The build on both grids and the sizes in the kernel, the same bits (run_gmm_device), and the host
  // path's.
  const std::vector<float> got = run_gmm_device(c, p, lhs, rhs, ex, bias);
  EXPECT_TRUE(same_bits(got, run_gmm(c, p, lhs, rhs, ex, bias)));
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs, ex, bias), tol.atol, tol.rtol));
}

TEST_F(DeviceTest, SizesInKernelTheBuildsBits) {
  for (const Case& t : cases()) expect_the_builds_bits(ctx(), t);
}

// A GPU's decode tiles: the reduction over K split across the workgroup.
TEST(SizesInKernel, TheBuildsBitsOnAGpusDecodeTiles) {
  Context c = gpu_planned_context();
  for (const Case& t : cases()) expect_the_builds_bits(c, t);
  for (auto& m : c.take_validation_messages()) ADD_FAILURE() << "validation message: " << m;
}

// On a GPU a decode's automatic schedule is the direct one only with an automatic tiling: the device path
// rerun with the host path's tiling fixed must take its schedule too (GmmPlan::schedule, as the bench and
// the CLI do) to read its sizes in the kernel; with the tiling alone it takes the shared schedule and the
// build. Each plan's schedule() is its kernel's.
TEST(SizesInKernel, OnAGpuTheHostPathsScheduleWithItsTiling) {
  Context c = gpu_planned_context();
  GmmProblem p;
  p.m = 16, p.k = 256, p.n = 64;
  p.group_sizes = {2, 2, 0, 3, 2, 1, 4, 2};
  const GmmPlan host(c, p);
  EXPECT_EQ(host.schedule(), Schedule::direct);
  const auto runs_shared = [](const GmmPlan& plan) {
    for (const PlannedPipeline& pp : PlanInternals::pipelines(plan))
      if (std::string(pp.role) == "op") return pp.constants[VKGMM_ID_USE_SHARED] != 0u;
    return false;
  };
  EXPECT_FALSE(runs_shared(host));
  GmmProblem tiled = p;
  tiled.tiling = TilingChoice::of(host.tiling());
  const GmmPlan tiling_alone = device_plan(c, tiled);
  EXPECT_EQ(tiling_alone.schedule(), Schedule::shared);
  EXPECT_TRUE(runs_shared(tiling_alone));
  EXPECT_FALSE(reads_sizes_in_kernel(tiling_alone));
  tiled.schedule = host.schedule();
  const GmmPlan both = device_plan(c, tiled);
  EXPECT_EQ(both.schedule(), Schedule::direct);
  EXPECT_EQ(both.tiling(), host.tiling());
  EXPECT_TRUE(reads_sizes_in_kernel(both));
}

// Which plans take it: few rows, unrouted, one tile height, the direct schedule, within the CPU loop
// budget, and the options; every other keeps the build. The direct schedule asked for: a GPU's automatic
// one gives 32 rows per group the shared schedule (a CPU's, the direct one).
TEST_F(DeviceTest, SizesInKernelOnlyWhereThePlanCan) {
  Context& c = ctx();
  GmmProblem p;
  p.m = 64, p.k = 32, p.n = 16;
  p.group_sizes = {30, 34};
  p.schedule = Schedule::direct;
  EXPECT_TRUE(reads_sizes_in_kernel(device_plan(c, p)));
  GmmProblem more = p;
  more.m = 65;
  more.group_sizes = {30, 35};
  EXPECT_FALSE(reads_sizes_in_kernel(device_plan(c, more)));
  EXPECT_GT(device_plan(c, more).workspace_bytes(), 0u);
  GmmProblem shared = p;
  shared.schedule = Schedule::shared;
  EXPECT_FALSE(reads_sizes_in_kernel(device_plan(c, shared)));
  GmmProblem groups = p;
  groups.group_sizes.assign(1025, 0);
  groups.group_sizes[0] = 64;
  EXPECT_FALSE(reads_sizes_in_kernel(device_plan(c, groups)));
  groups.group_sizes.resize(1024);
  EXPECT_TRUE(reads_sizes_in_kernel(device_plan(c, groups)));
  {
    const SizesInKernelHook off(c, false);
    EXPECT_FALSE(reads_sizes_in_kernel(device_plan(c, p)));
  }
  // Nothing to dispatch: the build still writes the status word.
  GmmProblem none = p;
  none.m = 0;
  none.group_sizes = {0, 0};
  EXPECT_GT(device_plan(c, none).workspace_bytes(), 0u);
}

// No status view: nothing is written for it; a workspace view given anyway is accepted and left alone,
// wherever it lies (over out too: it is never bound).
TEST_F(DeviceTest, SizesInKernelWithoutAStatusViewOrWithAWorkspace) {
  Context& c = ctx();
  GmmProblem p;
  p.m = 10, p.k = 8, p.n = 8;
  p.group_sizes = {4, -2, 6};  // a negative size: flagged where a status view is given
  std::mt19937 rng(5);
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(3 * size_t(p.k) * p.n, DType::f32, rng);
  uint32_t want_status = 0;
  GmmProblem host = p;
  host.group_sizes = sizes_taken(p.group_sizes, p.m, want_status);
  const std::vector<float> want = run_gmm(c, host, lhs, rhs);
  const GmmPlan plan = device_plan(c, p);
  ASSERT_TRUE(reads_sizes_in_kernel(plan));
  Guarded l = guarded_floats(c, lhs), r = guarded_floats(c, rhs), o(c, want.size() * 4), s(c, 12), work(c, 64);
  s.set(p.group_sizes.data(), 12);
  const std::vector<uint8_t> untouched = work.get();
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), r.view(), o.view(), {}, s.view()}); });
  EXPECT_TRUE(same_bits(floats(o), want));
  o.poison();
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), r.view(), o.view(), {}, s.view(), work.view()}); });
  EXPECT_TRUE(same_bits(floats(o), want));
  EXPECT_EQ(work.get(), untouched);
  o.poison();
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), r.view(), o.view(), {}, s.view(), o.view()}); });
  EXPECT_TRUE(same_bits(floats(o), want));
  Buffer status = status_word(c);
  c.submit_and_wait([&](VkCommandBuffer cb) {
    plan.record(cb, {l.view(), r.view(), o.view(), {}, s.view(), {}, status.view()});
  });
  expect_status(status, want_status);
  for (const Guarded* g : {&l, &r, &o, &s, &work}) EXPECT_TRUE(g->guards_intact());
}

// Recorded twice back to back with no barrier between, each record into its own out and with no status
// view: every buffer of the app's but out is only read (the sizes at a binding the module declares
// read-only; META and the missing status word at out, which the op writes anyway), so synchronization
// validation (the test's .sync run) finds no hazard between the two; both give the host path's bits.
TEST_F(DeviceTest, SizesInKernelRecordsBackToBackReadingTheSizesOnly) {
  Context& c = ctx();
  GmmProblem p;
  p.m = 20, p.k = 24, p.n = 16;
  p.group_sizes = {3, 0, 9, 6};
  std::mt19937 rng(6);
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(4 * size_t(p.k) * p.n, DType::f32, rng);
  const std::vector<float> want = run_gmm(c, p, lhs, rhs);
  const GmmPlan plan = device_plan(c, p);
  ASSERT_TRUE(reads_sizes_in_kernel(plan));
  Buffer l = upload(c, DType::f32, lhs), r = upload(c, DType::f32, rhs), sizes = c.create_buffer(16);
  sizes.upload(p.group_sizes.data(), 16);
  Buffer first = poisoned(c, want.size() * 4), second = poisoned(c, want.size() * 4);
  c.submit_and_wait([&](VkCommandBuffer cb) {
    plan.record(cb, {l.view(), r.view(), first.view(), {}, sizes.view()});
    plan.record(cb, {l.view(), r.view(), second.view(), {}, sizes.view()});
  });
  EXPECT_TRUE(same_bits(download(first, DType::f32, want.size()), want));
  EXPECT_TRUE(same_bits(download(second, DType::f32, want.size()), want));
}

}  // namespace
}  // namespace vkgmm::test
