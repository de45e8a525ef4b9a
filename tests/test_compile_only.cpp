// The compile-only context behind `vkgmm gpu-report`: plans make exactly the pipelines a run would bind
// (module, constants), and nothing is allocated, recorded or submitted. On lavapipe here; the report's own
// tests run it on RADV's null devices, which cannot allocate or submit at all.
#include <gtest/gtest.h>

#include <string>

#include "context_impl.hpp"
#include "interface.hpp"
#include "plan_internals.hpp"
#include "shader_modules.hpp"
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

std::vector<std::string> part_names(const std::vector<PlannedPart>& parts) {
  std::vector<std::string> names;
  for (const PlannedPart& p : parts) names.push_back(p.part);
  return names;
}

TEST(CompileOnly, TheBackwardListsEveryPassAndHoldsNoMemory) {
  Context ctx = open_compile_only({});
  // Routed by ids with bias + SwiGLU: the recompute, the gradient pass through the activation, d_rhs,
  // d_bias and d_lhs, no workspace or ids allocated, every record refused.
  GmmProblem r;
  r.m = 8, r.k = 32, r.n = 48;
  r.num_rhs_groups = 4;
  r.routing = {.top_k = 2, .combine = true, .num_experts = 4};
  r.epilogue.bias = true;
  r.epilogue.activation = Activation::swiglu;
  const GmmBackwardPlan routed(ctx, r);
  const std::vector<PlannedPart> parts = PlanInternals::parts(routed);
  EXPECT_EQ(part_names(parts), (std::vector<std::string>{"forward", "grad", "d_rhs", "d_bias", "d_lhs"}));
  for (const PlannedPart& p : parts) {
    EXPECT_EQ(p.tiling.has_value(), std::string(p.part) != "grad") << p.part;
    ASSERT_FALSE(p.pipelines.empty()) << p.part;
    for (const PlannedPipeline& x : p.pipelines) EXPECT_NE(x.pipeline, VK_NULL_HANDLE) << p.part << " " << x.role;
  }
  ASSERT_EQ(parts[1].pipelines.size(), 1u);
  const PlannedPipeline& grad = parts[1].pipelines[0];
  EXPECT_STREQ(grad.role, "grad");
  EXPECT_EQ(grad.code.code, routed_grad_shader().code);
  EXPECT_TRUE(grad.split);
  EXPECT_EQ(grad.constants[VKGMM_ID_GRAD_ACTIVATION], uint32_t(Activation::swiglu));
  EXPECT_EQ(grad.constants[VKGMM_ID_GRAD_COMBINED], 1u);
  EXPECT_EQ(grad.constants[VKGMM_ID_VEC4], 1u);  // out_n = 24 and k = 32: whole 4-column rows
  // d_lhs takes the forward's routing: its build of a given one first, never its own.
  ASSERT_FALSE(parts[4].pipelines.empty());
  EXPECT_STREQ(parts[4].pipelines[0].role, "metadata given");
  for (const PlannedPipeline& x : parts[4].pipelines) EXPECT_STRNE(x.role, "metadata");
  EXPECT_EQ(routed.metadata_bytes(), 0u);
  for (bool record : {false, true}) {
    auto [status, message] = error_of([&] {
      if (record) routed.record(reinterpret_cast<VkCommandBuffer>(uintptr_t(1)), {});
      else routed.check({});
    });
    EXPECT_EQ(status, Status::unsupported);
    EXPECT_NE(message.find("gmm_backward: the context only compiles pipelines"), std::string::npos) << message;
  }

  // The same backward on an ordinary context makes the same gradient pass.
  Context run_ctx;
  const std::vector<PlannedPart> run = PlanInternals::parts(GmmBackwardPlan(run_ctx, r));
  ASSERT_EQ(part_names(run), part_names(parts));
  EXPECT_EQ(run[1].pipelines[0].constants, grad.constants);

  // Group sizes with a bias take the routed path (each row's group its id): no ids uploaded here.
  GmmProblem g = small_gmm();
  g.epilogue.bias = true;
  const GmmBackwardPlan sized(ctx, g);
  EXPECT_EQ(part_names(PlanInternals::parts(sized)),
            (std::vector<std::string>{"forward", "grad", "d_rhs", "d_bias", "d_lhs"}));
  EXPECT_EQ(sized.metadata_bytes(), 0u);
  // Its sizes are an ordinary context's: the ids are the plan's, no pre-activation taken.
  const GmmBackwardSizes compiled = sized.sizes(), run_sizes = GmmBackwardPlan(run_ctx, g).sizes();
  EXPECT_EQ(compiled.ids, 0u);
  EXPECT_EQ(compiled.pre_activation, 0u);
  EXPECT_EQ(compiled.ids, run_sizes.ids);
  EXPECT_EQ(compiled.pre_activation, run_sizes.pre_activation);
  EXPECT_EQ(compiled.d_bias, run_sizes.d_bias);
  // No tokens: only the tgmms run (every expert's gradient 0).
  GmmProblem none = r;
  none.m = 0;
  EXPECT_EQ(part_names(PlanInternals::parts(GmmBackwardPlan(ctx, none))), (std::vector<std::string>{"d_rhs", "d_bias"}));
  // Without an epilogue: d_lhs's gmm and d_rhs's tgmm; frozen block-format weights: d_lhs alone.
  EXPECT_EQ(part_names(PlanInternals::parts(GmmBackwardPlan(ctx, small_gmm()))),
            (std::vector<std::string>{"d_lhs", "d_rhs"}));
  GmmProblem q = small_gmm();
  q.rhs_type = DType::q8_0;
  q.transpose_rhs = true;
  EXPECT_EQ(part_names(PlanInternals::parts(GmmBackwardPlan(ctx, q))), (std::vector<std::string>{"d_lhs"}));
  // A moved-from plan is refused by name.
  GmmBackwardPlan from(ctx, small_gmm());
  const GmmBackwardPlan to = std::move(from);
  EXPECT_EQ(error_of([&] { PlanInternals::parts(from); }).first, Status::invalid_argument);
  EXPECT_EQ(part_names(PlanInternals::parts(to)), (std::vector<std::string>{"d_lhs", "d_rhs"}));
  EXPECT_TRUE(ctx.take_validation_messages().empty());
}

TEST(CompileOnly, TopKListsItsPipelines) {
  Context ctx = open_compile_only({});
  const TopKProblem p{.tokens = 8, .experts = 16, .top_k = 4, .renormalize = false};
  const std::vector<PlannedPipeline> forward = PlanInternals::pipelines(TopKPlan(ctx, p));
  ASSERT_EQ(forward.size(), 1u);
  EXPECT_STREQ(forward[0].role, "top_k");
  EXPECT_EQ(forward[0].code.code, topk_shader().code);
  EXPECT_EQ(forward[0].constants[VKGMM_ID_TOPK_RENORMALIZE], 0u);
  EXPECT_NE(forward[0].pipeline, VK_NULL_HANDLE);
  const std::vector<PlannedPipeline> backward = PlanInternals::pipelines(TopKBackwardPlan(ctx, p, {.accumulate = true}));
  ASSERT_EQ(backward.size(), 1u);
  EXPECT_STREQ(backward[0].role, "top_k backward");
  EXPECT_EQ(backward[0].code.code, topk_grad_shader().code);
  EXPECT_EQ(backward[0].constants[VKGMM_ID_TOPK_GRAD_ACCUMULATE], 1u);
  // No tokens: nothing dispatched, no pipeline.
  EXPECT_TRUE(PlanInternals::pipelines(TopKPlan(ctx, {.tokens = 0, .experts = 16, .top_k = 4})).empty());
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
