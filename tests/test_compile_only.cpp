// The compile-only context behind `vkgmm gpu-report`: plans make exactly the pipelines a run would bind
// (module, constants), and nothing is allocated, recorded or submitted. On lavapipe here; the report's own
// tests run it on RADV's null devices, which cannot allocate or submit at all.
#include <gtest/gtest.h>

#include <string>

#include "context_impl.hpp"
#include "interface.hpp"
#include "plan_internals.hpp"
#include "vkgmm/vkgmm.hpp"

namespace vkgmm {
namespace {

// The error f throws: its status and message (Status::ok and "" when it throws none).
template <typename F>
std::pair<Status, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
  return {Status::ok, ""};
}

GmmProblem small_gmm() {
  GmmProblem p;
  p.m = 64, p.k = 32, p.n = 48;
  p.group_sizes = {32, 0, 30};
  return p;
}

TEST(CompileOnly, PlansMakeTheirPipelinesAndHoldNoMemory) {
  Context ctx = open_compile_only({});
  const GmmPlan plan(ctx, small_gmm());
  const std::vector<PlannedPipeline> pipes = PlanInternals::pipelines(plan);
  ASSERT_EQ(pipes.size(), 1u);
  EXPECT_STREQ(pipes[0].role, "op");
  EXPECT_NE(pipes[0].pipeline, VK_NULL_HANDLE);
  // The constants are the plan's: its tiling as it runs.
  ASSERT_GT(pipes[0].constants.size(), size_t(VKGMM_ID_BLOCK_COLS));
  EXPECT_EQ(pipes[0].constants[VKGMM_ID_BLOCK_ROWS], uint32_t(plan.tiling().tm));
  EXPECT_EQ(pipes[0].constants[VKGMM_ID_STEP], uint32_t(plan.tiling().tk));
  EXPECT_EQ(pipes[0].constants[VKGMM_ID_BLOCK_COLS], uint32_t(plan.tiling().tn));
  EXPECT_EQ(plan.metadata_bytes(), 0u);  // the host-built metadata is never uploaded

  // The same problem on an ordinary context makes the same pipeline (same module, same constants).
  Context run_ctx;
  const std::vector<PlannedPipeline> run = PlanInternals::pipelines(GmmPlan(run_ctx, small_gmm()));
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].code.code, pipes[0].code.code);
  EXPECT_EQ(run[0].constants, pipes[0].constants);
  EXPECT_TRUE(ctx.take_validation_messages().empty());
}

TEST(CompileOnly, DeviceSizesAndRoutingListTheirBuildsAndCombine) {
  Context ctx = open_compile_only({});
  GmmProblem p = small_gmm();
  p.group_sizes.clear();
  p.device_group_sizes.count = 3;
  // A call of few rows (a decode's: the direct schedule on any device) reads its sizes in the kernel: one
  // pipeline.
  p.m = 8;
  const std::vector<PlannedPipeline> in_kernel = PlanInternals::pipelines(GmmPlan(ctx, p));
  ASSERT_EQ(in_kernel.size(), 1u);
  EXPECT_STREQ(in_kernel[0].role, "op");
  EXPECT_EQ(in_kernel[0].constants[VKGMM_ID_GMM_SIZES_IN_KERNEL], 1u);
  // The build's, where the options keep it.
  ContextInternals::of(ctx).dev.options.sizes_in_kernel = false;
  const std::vector<PlannedPipeline> sized = PlanInternals::pipelines(GmmPlan(ctx, p));
  ContextInternals::of(ctx).dev.options.sizes_in_kernel = true;
  ASSERT_EQ(sized.size(), 2u);
  EXPECT_STREQ(sized[0].role, "metadata");
  EXPECT_STREQ(sized[1].role, "op");
  EXPECT_EQ(sized[0].constants[VKGMM_ID_META_VISITS], 1u);
  EXPECT_EQ(sized[1].constants[VKGMM_ID_GMM_SIZES_IN_KERNEL], 0u);

  GmmProblem r = small_gmm();
  r.group_sizes.clear();
  r.m = 8;
  r.num_rhs_groups = 4;
  r.routing = {2, false, true, 4};
  r.out_type = DType::f32;
  r.schedule = Schedule::shared;
  const std::vector<PlannedPipeline> routed = PlanInternals::pipelines(GmmPlan(ctx, r));
  ASSERT_EQ(routed.size(), 4u);
  EXPECT_STREQ(routed[0].role, "metadata");
  EXPECT_EQ(routed[0].constants[VKGMM_ID_META_ROUTE_WEIGHTED], 1u);
  EXPECT_EQ(routed[0].constants[VKGMM_ID_META_ROUTE_GIVEN], 0u);
  EXPECT_EQ(routed[1].constants[VKGMM_ID_GMM_FUSED_COMBINE], 0u);
  EXPECT_STREQ(routed[2].role, "combine");
  // The build that takes another plan's routing (MoeLayerPlan's down projection, a backward's d_lhs):
  // the same module and constants but ROUTE_GIVEN, and never its counts in shared memory.
  EXPECT_STREQ(routed[3].role, "metadata given");
  EXPECT_EQ(routed[3].code.code, routed[0].code.code);
  std::vector<uint32_t> own = routed[0].constants;
  own[VKGMM_ID_META_ROUTE_GIVEN] = 1u;
  own[VKGMM_ID_META_ROUTE_SHARED_COUNTS] = 0u;
  EXPECT_EQ(routed[3].constants, own);
  for (const PlannedPipeline& x : routed) EXPECT_NE(x.pipeline, VK_NULL_HANDLE);
  EXPECT_NE(routed[3].pipeline, routed[0].pipeline);
  // The direct schedule sums a small call's slots in the kernel: no combine pipeline.
  r.schedule = Schedule::direct;
  const std::vector<PlannedPipeline> fused = PlanInternals::pipelines(GmmPlan(ctx, r));
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_STREQ(fused[1].role, "op");
  EXPECT_EQ(fused[1].constants[VKGMM_ID_GMM_FUSED_COMBINE], 1u);
  EXPECT_STREQ(fused[2].role, "metadata given");
  for (const PlannedPipeline& x : fused) EXPECT_NE(x.pipeline, VK_NULL_HANDLE);
}

TEST(CompileOnly, RefusesMemoryRecordingAndSubmission) {
  Context ctx = open_compile_only({});
  const GmmPlan plan(ctx, small_gmm());
  auto [status, message] = error_of([&] { ctx.create_buffer(256); });
  EXPECT_EQ(status, Status::unsupported);
  EXPECT_NE(message.find("create_buffer"), std::string::npos) << message;
  std::tie(status, message) = error_of([&] { plan.check({}); });
  EXPECT_EQ(status, Status::unsupported);
  EXPECT_NE(message.find("only compiles pipelines"), std::string::npos) << message;
  bool recorded = false;
  std::tie(status, message) = error_of([&] { ctx.submit_and_wait([&](VkCommandBuffer) { recorded = true; }); });
  EXPECT_EQ(status, Status::unsupported);
  EXPECT_NE(message.find("submit_and_wait"), std::string::npos) << message;
  EXPECT_FALSE(recorded);
}

}  // namespace
}  // namespace vkgmm
