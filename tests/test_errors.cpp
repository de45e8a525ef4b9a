// Every error of the contract is refused before any GPU work, names its argument, writes nothing, and
// leaves the context usable.
#include <algorithm>

#include "gpu_harness.hpp"
#include "operands.hpp"
#include "pipeline_cache.hpp"
#include "texel_views.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm::test {
namespace {

GmmProblem good_gmm() {
  GmmProblem p;
  p.m = 16;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {6, 10};
  return p;
}

TgmmProblem good_tgmm() {
  TgmmProblem p;
  p.m = 16;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {6, 10};
  return p;
}

TEST_F(DeviceTest, GmmPlanErrorsNameTheArgument) {
  auto plan = [&](GmmProblem p) { GmmPlan(ctx(), p); };
  auto with = [](auto edit) {
    GmmProblem p = good_gmm();
    edit(p);
    return p;
  };
  expect_refused([&] { plan(with([](GmmProblem& p) { p.m = -1; })); }, Status::invalid_argument, "m = -1");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.k = 0; })); }, Status::invalid_argument, "k = 0");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.n = 0; })); }, Status::invalid_argument, "n = 0");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.group_sizes = {}; })); }, Status::invalid_argument,
               "group_sizes");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.group_sizes = {6, -1}; })); }, Status::invalid_argument,
               "group_sizes[1] = -1");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.group_sizes = {6, 11}; })); }, Status::invalid_argument,
               "sum(group_sizes) = 17 exceeds m = 16");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.group_offset = 2; })); }, Status::invalid_argument,
               "group_offset = 2");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.group_offset = -1; })); }, Status::invalid_argument,
               "group_offset = -1");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.group_offset = 1, p.num_rhs_groups = 2; })); },
               Status::invalid_argument, "num_rhs_groups (rhs.shape[0]) = 2 must be in [1, 1]");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.num_rhs_groups = 0; })); }, Status::invalid_argument,
               "num_rhs_groups (rhs.shape[0]) = 0");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.tiling = TilingChoice::of(Tiling{0, 8, 8}); })); },
               Status::invalid_argument, "tiling (0, 8, 8)");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.tiling = TilingChoice::of(Tiling{8, -2, 8}); })); },
               Status::invalid_argument, "must have positive");
  expect_refused(
      [&] {
        plan(with([](GmmProblem& p) {
          p.tiling = TilingChoice::of([](int64_t, int64_t, int64_t) -> std::optional<Tiling> { return {}; });
        }));
      },
      Status::invalid_argument, "(m, k, n) = (16, 8, 8)");
  expect_refused(
      [&] {
        plan(with([](GmmProblem& p) {
          p.m = 4096, p.n = 4096, p.group_sizes = {1};
          p.tiling = TilingChoice::of(Tiling{4096, 8, 4096});
          p.schedule = Schedule::direct;
        }));
      },
      Status::invalid_argument, "accumulators");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.schedule = static_cast<Schedule>(9); })); },
               Status::invalid_argument, "schedule: 9");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.lhs_type = static_cast<DType>(7); })); },
               Status::invalid_argument, "lhs has an unsupported element type (");
  expect_refused([&] { plan(with([](GmmProblem& p) { p.out_type = static_cast<DType>(99); })); },
               Status::invalid_argument, "out (out_type, Python's preferred_element_type) has an unsupported element type");
  // A block format is a type, but not one out takes: the message names it and what is taken.
  expect_refused([&] { plan(with([](GmmProblem& p) { p.out_type = DType::q8_0; })); }, Status::invalid_argument,
                 "out (out_type, Python's preferred_element_type) has an unsupported element type (q8_0; f32, f16 or bf16)");
}

// lavapipe ends an invocation's loops after 65535 iterations in all: a reduction that needs more is
// refused on CPU devices (it returned partial sums: k = 70001 gave 65534 for a sum of ones), one within
// the budget runs and matches the reference.
TEST_F(DeviceTest, ReductionsPastTheCpuLoopBudgetAreRefused) {
  Context& c = ctx();
  if (c.info().type != VK_PHYSICAL_DEVICE_TYPE_CPU)
    GTEST_SKIP() << "the loop budget (65535 iterations per invocation) is a CPU driver's, checked on CPU devices only";
  GmmProblem p;
  p.m = 3;
  p.k = 70001;
  p.n = 2;
  p.group_sizes = {3};
  try {
    GmmPlan plan(c, p);
    ADD_FAILURE() << "k = 70001 was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::unsupported);
    EXPECT_NE(std::string(e.what()).find("k = 70001"), std::string::npos) << e.what();
  }
  p.k = 65001;  // odd: scalar loads, one iteration per element, inside the budget
  expect_gmm_matches_reference(c, p, 3);
  try {
    TopKPlan plan(c, {2, 32768, 2, true});
    ADD_FAILURE() << "top_k over 32768 experts was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::unsupported);
    EXPECT_NE(std::string(e.what()).find("experts = 32768"), std::string::npos) << e.what();
  }
}

TEST_F(DeviceTest, TgmmPlanErrorsNameTheArgument) {
  auto plan = [&](TgmmProblem p) { TgmmPlan(ctx(), p); };
  auto with = [](auto edit) {
    TgmmProblem p = good_tgmm();
    edit(p);
    return p;
  };
  expect_refused([&] { plan(with([](TgmmProblem& p) { p.num_actual_groups = 3; })); }, Status::invalid_argument,
               "num_actual_groups = 3");
  expect_refused([&] { plan(with([](TgmmProblem& p) { p.group_offset = 1, p.num_actual_groups = 2; })); },
               Status::invalid_argument, "num_actual_groups = 2");
  expect_refused([&] { plan(with([](TgmmProblem& p) { p.group_offset = 5; })); }, Status::invalid_argument,
               "group_offset = 5");
  expect_refused([&] { plan(with([](TgmmProblem& p) { p.group_sizes = {20}; })); }, Status::invalid_argument,
               "sum(group_sizes) = 20 exceeds m = 16");
}

// Bad views are refused at record time, before anything is recorded: the output stays as it was.
TEST_F(DeviceTest, RecordErrorsWriteNothing) {
  GmmProblem p = good_gmm();
  GmmPlan plan(ctx(), p);
  OperandSizes s = plan.sizes();
  Buffer lhs = ctx().create_buffer(s.lhs), rhs = ctx().create_buffer(s.rhs), out = ctx().create_buffer(s.out);
  std::vector<uint8_t> poison(s.out, 0x5A);
  out.upload(poison.data(), poison.size());
  auto run = [&](const GmmOperands& ops) { ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); }); };
  expect_refused([&] { run({lhs.view(0, s.lhs - 4), rhs.view(), out.view(), {}}); }, Status::invalid_argument,
               "lhs: view of");
  expect_refused([&] { run({lhs.view(), rhs.view(0, 8), out.view(), {}}); }, Status::invalid_argument, "rhs: view of");
  expect_refused([&] { run({lhs.view(), rhs.view(), out.view(2, s.out - 2), {}}); }, Status::invalid_argument,
               "out: offset 2");
  expect_refused([&] { run({lhs.view(), rhs.view(), BufferView{}, {}}); }, Status::invalid_argument,
               "out: buffer is VK_NULL_HANDLE");
  expect_refused([&] { run({lhs.view(), rhs.view(), out.view(), out.view()}); }, Status::invalid_argument,
               "existing_out: a view was given");
  expect_refused([&] { run({lhs.view(), rhs.view(), lhs.view(), {}}); }, Status::invalid_argument, "out overlaps lhs");
  std::vector<uint8_t> after(s.out);
  out.download(after.data(), after.size());
  EXPECT_EQ(after, poison);

  // The context still works.
  std::mt19937 rng(1);
  auto l = random_values(16 * 8, DType::f32, rng), r = random_values(2 * 8 * 8, DType::f32, rng);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, l, r), reference::gmm(p, l, r), 1e-3, 1e-5));
}

TEST_F(DeviceTest, ExistingOutMustBeGivenWhenPlanned) {
  GmmProblem p = good_gmm();
  p.existing_out = true;
  GmmPlan plan(ctx(), p);
  Buffer b = ctx().create_buffer(4096);
  expect_refused([&] { plan.check({b.view(0, 512), b.view(512, 512), b.view(1024, 512), {}}); },
               Status::invalid_argument, "the problem has existing_out but no view");
  expect_refused([&] { plan.check({b.view(0, 512), b.view(512, 512), b.view(1024, 512), b.view(1028, 512)}); },
               Status::invalid_argument, "existing_out overlaps out");
}

// A view must lie inside its buffer: past the end, the shader would read or write memory that is not the
// buffer's. Refused at record time, exactly for vkgmm's buffers, and within the driver's alignment for the
// app's own.
TEST_F(DeviceTest, ViewPastTheEndOfItsBufferIsRefused) {
  GmmProblem p = good_gmm();
  GmmPlan plan(ctx(), p);
  const OperandSizes s = plan.sizes();
  Buffer lhs = ctx().create_buffer(s.lhs), rhs = ctx().create_buffer(s.rhs), out = ctx().create_buffer(s.out);
  Buffer small = ctx().create_buffer(64);
  expect_refused([&] { plan.check({small.view(0, s.lhs), rhs.view(), out.view(), {}}); }, Status::invalid_argument,
               "lhs: the view [0, 0 + " + std::to_string(s.lhs) + ") runs past the end of its 64-byte buffer");
  expect_refused([&] { plan.check({lhs.view(), rhs.view(), out.view(4, s.out), {}}); }, Status::invalid_argument,
               "out: the view [4, 4 + " + std::to_string(s.out) + ")");
  expect_refused([&] { plan.check({lhs.view(), rhs.view(~VkDeviceSize{0} - 8, s.rhs), out.view(), {}}); },
               Status::invalid_argument, "rhs: the view");

  // The app's own VkBuffer, which vkgmm knows only through its memory requirements.
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = 64;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer app = VK_NULL_HANDLE;
  ASSERT_EQ(vkCreateBuffer(ctx().device(), &bci, nullptr, &app), VK_SUCCESS);
  expect_refused([&] { plan.check({{app, 0, 1 << 20}, rhs.view(), out.view(), {}}); }, Status::invalid_argument,
               "runs past the end of its at most");
  vkDestroyBuffer(ctx().device(), app, nullptr);
}

TEST_F(DeviceTest, RecordErrorsOfTgmmAndExistingOut) {
  TgmmProblem p = good_tgmm();
  p.existing_out = true;
  TgmmPlan plan(ctx(), p);
  const OperandSizes s = plan.sizes();
  Buffer lhs = ctx().create_buffer(s.lhs), rhs = ctx().create_buffer(s.rhs), out = ctx().create_buffer(s.out);
  Buffer ex = ctx().create_buffer(s.existing_out);
  expect_refused([&] { plan.check({lhs.view(), rhs.view(), out.view(), ex.view(0, s.existing_out - 4)}); },
               Status::invalid_argument, "existing_out: view of");
  expect_refused([&] { plan.check({lhs.view(), rhs.view(), out.view(0, 16), ex.view()}); }, Status::invalid_argument,
               "out: view of 16 bytes is too small");
  expect_refused([&] { plan.check({lhs.view(), rhs.view(), rhs.view(), ex.view()}); }, Status::invalid_argument,
               "out overlaps rhs");
  expect_refused([&] { plan.check({lhs.view(), rhs.view(), out.view(), {}}); }, Status::invalid_argument,
               "existing_out");
  expect_refused([&] { plan.record(VK_NULL_HANDLE, {lhs.view(), rhs.view(), out.view(), ex.view()}); },
               Status::invalid_argument, "command buffer is VK_NULL_HANDLE");
}

TEST_F(DeviceTest, MoreTgmmAndBackwardPlanErrors) {
  auto tplan = [&](auto edit) {
    TgmmProblem p = good_tgmm();
    edit(p);
    TgmmPlan(ctx(), p);
  };
  expect_refused([&] { tplan([](TgmmProblem& p) { p.k = 0; }); }, Status::invalid_argument, "k = 0");
  expect_refused([&] { tplan([](TgmmProblem& p) { p.group_sizes = {-3, 4}; }); }, Status::invalid_argument,
               "group_sizes[0] = -3");
  expect_refused([&] { tplan([](TgmmProblem& p) { p.group_offset = -1; }); }, Status::invalid_argument,
               "group_offset = -1");
  expect_refused([&] { tplan([](TgmmProblem& p) { p.num_actual_groups = 0; }); }, Status::invalid_argument,
               "num_actual_groups = 0");
  expect_refused([&] { tplan([](TgmmProblem& p) { p.tiling = TilingChoice::of(Tiling{8, 0, 8}); }); },
               Status::invalid_argument, "tiling");
  expect_refused([&] { tplan([](TgmmProblem& p) { p.rhs_type = static_cast<DType>(5); }); },
               Status::invalid_argument, "rhs has an unsupported element type");
  GmmProblem f = good_gmm();
  f.group_sizes = {20};
  expect_refused([&] { GmmBackwardPlan(ctx(), f); }, Status::invalid_argument, "sum(group_sizes) = 20 exceeds m = 16");
}

// A workspace the backward hands its parts in slices is checked whole: one that runs past the end of its
// buffer is refused, though each part's slice would fit.
TEST_F(DeviceTest, BackwardWorkspacePastItsBufferIsRefused) {
  GmmProblem f = good_gmm();
  f.group_sizes = {};
  f.device_group_sizes.count = 2;
  const GmmBackwardPlan plan(ctx(), f);
  const VkDeviceSize ws = plan.workspace_bytes();
  ASSERT_GT(ws, 0u);
  Buffer b = ctx().create_buffer(8192), w = ctx().create_buffer(ws);
  GmmBackwardOperands ops{b.view(0, 512), b.view(512, 512), b.view(1024, 512), b.view(1536, 512), b.view(2048, 512)};
  ops.group_sizes = b.view(4096, 8);
  ops.workspace = w.view(0, ws);
  plan.check(ops);
  const VkDeviceSize align = std::max<VkDeviceSize>(ctx().info().min_storage_buffer_offset_alignment, 4);
  ops.workspace = BufferView{w.handle(), align, ws};
  expect_refused([&] { plan.check(ops); }, Status::invalid_argument, "gmm_backward: workspace: the view [");
}

// The backward refuses its forward problem under its own name and the forward's fields, though its parts'
// problems swap k with n and lhs with out.
TEST_F(DeviceTest, BackwardNamesTheForwardsFields) {
  auto backward = [&](auto edit) {
    GmmProblem f = good_gmm();
    edit(f);
    GmmBackwardPlan(ctx(), f);
  };
  expect_refused([&] { backward([](GmmProblem& f) { f.n = 0; }); }, Status::invalid_argument, "gmm_backward: n = 0 must be >= 1");
  expect_refused([&] { backward([](GmmProblem& f) { f.k = 0; }); }, Status::invalid_argument, "gmm_backward: k = 0 must be >= 1");
  expect_refused([&] { backward([](GmmProblem& f) { f.out_type = DType::q8_0; }); }, Status::invalid_argument,
                 "gmm_backward: out (out_type");
  expect_refused([&] { backward([](GmmProblem& f) { f.lhs_type = DType::q8_0; }); }, Status::invalid_argument,
                 "gmm_backward: lhs has an unsupported element type");
  expect_refused([&] { backward([](GmmProblem& f) { f.rhs_type = DType::q8_0; }); }, Status::invalid_argument,
                 "gmm_backward: rhs: q8_0 blocks of 32 values lie along rhs's rows: n = 8 must be a multiple of 32 "
                 "(rhs [G_local, k, n])");
  expect_refused([&] { backward([](GmmProblem& f) { f.num_rhs_groups = 3; }); }, Status::invalid_argument,
                 "gmm_backward: num_rhs_groups");
}

// The backward's two dispatches have no barrier between them: outputs may not overlap the other's operands.
TEST_F(DeviceTest, BackwardOutputsMayNotOverlapInputs) {
  GmmProblem p = good_gmm();
  GmmBackwardPlan plan(ctx(), p);
  Buffer b = ctx().create_buffer(8192);
  const BufferView lhs = b.view(0, 512), rhs = b.view(512, 512), d_out = b.view(1024, 512),
                   d_lhs = b.view(1536, 512), d_rhs = b.view(2048, 512);
  auto run = [&](const GmmBackwardOperands& ops) {
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  };
  expect_refused([&] { run({lhs, rhs, d_out, lhs, d_rhs}); }, Status::invalid_argument, "d_lhs overlaps lhs");
  expect_refused([&] { run({lhs, rhs, d_out, d_lhs, rhs}); }, Status::invalid_argument, "d_rhs overlaps rhs");
  expect_refused([&] { run({lhs, rhs, d_out, d_lhs, d_lhs}); }, Status::invalid_argument, "d_lhs overlaps d_rhs");
}

// A view the backward needs but was not given is named by the backward's operand table, under the
// backward's name, not by the part plan that binds it under another (d_out is the d_lhs gmm's lhs).
TEST_F(DeviceTest, BackwardNamesTheViewsItNeeds) {
  Buffer b = ctx().create_buffer(8192);
  const BufferView lhs = b.view(0, 512), rhs = b.view(512, 512), d_out = b.view(1024, 512),
                   d_lhs = b.view(1536, 512), d_rhs = b.view(2048, 512);
  GmmBackwardPlan plan(ctx(), good_gmm());
  const std::pair<GmmBackwardOperands, const char*> missing[] = {
      {{{}, rhs, d_out, d_lhs, d_rhs}, "lhs: the weights' gradient is computed from it but no view was given"},
      {{lhs, {}, d_out, d_lhs, d_rhs}, "rhs: the forward has rows and a local expert but no view was given"},
      {{lhs, rhs, {}, d_lhs, d_rhs}, "d_out: the forward has rows (m > 0) but no view was given"},
      {{lhs, rhs, d_out, {}, d_rhs}, "d_lhs: the forward has rows (m > 0) but no view was given"},
      {{lhs, rhs, d_out, d_lhs, {}}, "d_rhs: the weights' gradient is computed but no view was given"},
  };
  for (const auto& [ops, message] : missing)
    expect_refused([&] { plan.check(ops); }, Status::invalid_argument, std::string("gmm_backward: ") + message);
  plan.check({lhs, rhs, d_out, d_lhs, d_rhs});
  // A view its parts refuse is named as the backward's operand: d_out is d_lhs's gmm's lhs and d_rhs's
  // tgmm's rhs, d_lhs that gmm's out.
  const std::pair<GmmBackwardOperands, const char*> small[] = {
      {{b.view(0, 8), rhs, d_out, d_lhs, d_rhs}, "gmm_backward: lhs: view of 8 bytes is too small"},
      {{lhs, b.view(512, 8), d_out, d_lhs, d_rhs}, "gmm_backward: rhs: view of 8 bytes is too small"},
      {{lhs, rhs, b.view(1024, 8), d_lhs, d_rhs}, "gmm_backward: d_out: view of 8 bytes is too small"},
      {{lhs, rhs, d_out, b.view(1536, 8), d_rhs}, "gmm_backward: d_lhs: view of 8 bytes is too small"},
      {{lhs, rhs, d_out, d_lhs, b.view(2048, 8)}, "gmm_backward: d_rhs: view of 8 bytes is too small"},
  };
  for (const auto& [ops, message] : small) expect_refused([&] { plan.check(ops); }, Status::invalid_argument, message);
  // Without rows only the weights' gradient (zero) is written; frozen weights have none, and lhs is unread.
  GmmProblem empty = good_gmm();
  empty.m = 0, empty.group_sizes = {0, 0};
  GmmBackwardPlan none(ctx(), empty);
  none.check({{}, {}, {}, {}, d_rhs});
  expect_refused([&] { none.check({}); }, Status::invalid_argument,
                 "gmm_backward: d_rhs: the weights' gradient is computed but no view was given");
  GmmProblem frozen = good_gmm();
  frozen.k = frozen.n = 32, frozen.rhs_type = DType::q8_0;
  GmmBackwardPlan weights_frozen(ctx(), frozen);
  const BufferView blocks = b.view(0, weights_frozen.sizes().rhs), wide_d_out = b.view(4096, 16 * 32 * 4),
                   wide_d_lhs = b.view(6144, 16 * 32 * 4);
  weights_frozen.check({{}, blocks, wide_d_out, wide_d_lhs, {}});
  expect_refused([&] { weights_frozen.check({{}, blocks, wide_d_out, wide_d_lhs, d_rhs}); },
                 Status::invalid_argument, "gmm_backward: d_rhs: a view was given but the weights are in a block format");
  // Routed by ids, frozen weights: the passes recompute the forward's product from lhs.
  GmmProblem routed = frozen;
  routed.m = 4, routed.group_sizes = {}, routed.num_rhs_groups = 4;
  routed.routing = {2, false, false, 4};
  GmmBackwardPlan recomputing(ctx(), routed);
  const GmmBackwardSizes rs = recomputing.sizes();
  Buffer r = ctx().create_buffer(rs.rhs + rs.d_out + rs.d_lhs + rs.ids + 3 * 256);
  auto at = [&](VkDeviceSize offset, VkDeviceSize bytes) { return r.view(offset, bytes); };
  GmmBackwardOperands ops;
  ops.rhs = at(0, rs.rhs);
  ops.d_out = at((rs.rhs + 255) / 256 * 256, rs.d_out);
  ops.d_lhs = at(ops.d_out.offset + (rs.d_out + 255) / 256 * 256, rs.d_lhs);
  ops.ids = at(ops.d_lhs.offset + (rs.d_lhs + 255) / 256 * 256, rs.ids);
  expect_refused([&] { recomputing.check(ops); }, Status::invalid_argument,
                 "gmm_backward: lhs: the routed backward recomputes the forward from it but no view was given");
  // A shard with no local expert reads no weights and writes no gradient of them.
  GmmProblem shard = routed;
  shard.rhs_type = DType::f32, shard.num_rhs_groups = 0;
  GmmBackwardPlan no_expert(ctx(), shard);
  const GmmBackwardSizes ns = no_expert.sizes();
  Buffer x = ctx().create_buffer(ns.lhs + ns.d_out + ns.d_lhs + ns.ids + 4 * 256);
  GmmBackwardOperands shard_ops;
  shard_ops.lhs = x.view(0, ns.lhs);
  shard_ops.d_out = x.view((ns.lhs + 255) / 256 * 256, ns.d_out);
  shard_ops.d_lhs = x.view(shard_ops.d_out.offset + (ns.d_out + 255) / 256 * 256, ns.d_lhs);
  shard_ops.ids = x.view(shard_ops.d_lhs.offset + (ns.d_lhs + 255) / 256 * 256, ns.ids);
  no_expert.check(shard_ops);
}

// Operands whose element count passes 2^64 as a 64-bit product of their dimensions (each below 2^31, at
// most 65,535 groups) are refused before their count could wrap to a small size that passes the size checks.
TEST_F(DeviceTest, ElementCountsPastTwoToTheSixtyFourAreRefused) {
  TgmmProblem t;
  t.m = 0, t.k = 16648831, t.n = 16906849;  // 65535 * k * n = 2^64 + 1966049
  t.group_sizes.assign(65535, 0);
  expect_refused([&] { TgmmPlan(ctx(), t); }, Status::unsupported, "tgmm: out: 65535 x 16648831 x 16906849 elements");
  GmmProblem g;
  g.m = 1, g.k = 16648831, g.n = 16906849;
  g.group_sizes.assign(65535, 0);
  g.group_sizes[0] = 1;
  expect_refused([&] { GmmPlan(ctx(), g); }, Status::unsupported, "gmm: rhs: 65535 x 16648831 x 16906849 elements");
}

// -1 is the one sentinel of a group count; other negative values are refused, naming the field.
TEST_F(DeviceTest, NegativeGroupCountsOtherThanMinusOneAreRefused) {
  GmmProblem g = good_gmm();
  g.num_rhs_groups = -2;
  expect_refused([&] { GmmPlan(ctx(), g); }, Status::invalid_argument, "num_rhs_groups (rhs.shape[0]) = -2 must be >= 0, or -1");
  TgmmProblem t = good_tgmm();
  t.num_actual_groups = -5;
  expect_refused([&] { TgmmPlan(ctx(), t); }, Status::invalid_argument, "num_actual_groups = -5 must be >= 0, or -1");
}

// A moved-from plan (its state gone to the plan it was moved into) refuses to check or record, naming the
// op, where it would dereference nothing; the plan it moved into runs.
TEST_F(DeviceTest, MovedFromPlansRefuse) {
  GmmPlan gmm(ctx(), good_gmm());
  GmmPlan moved_gmm = std::move(gmm);
  expect_refused([&] { gmm.check({}); }, Status::invalid_argument, "gmm: the plan is empty (moved from)");
  expect_refused([&] { ctx().submit_and_wait([&](VkCommandBuffer cb) { gmm.record(cb, {}); }); },
                 Status::invalid_argument, "gmm: the plan is empty (moved from)");
  EXPECT_GT(moved_gmm.sizes().lhs, 0u);
  TgmmPlan tgmm(ctx(), good_tgmm());
  TgmmPlan moved_tgmm = std::move(tgmm);
  expect_refused([&] { tgmm.sizes(); }, Status::invalid_argument, "tgmm: the plan is empty (moved from)");
  TopKProblem k;
  k.tokens = 4, k.experts = 4, k.top_k = 2;
  TopKPlan top_k(ctx(), k);
  TopKPlan moved_top_k = std::move(top_k);
  expect_refused([&] { top_k.check({}); }, Status::invalid_argument, "top_k: the plan is empty (moved from)");
}

// A device that no index or name picks is refused naming the option and the variable.
TEST_F(DeviceTest, UnknownDeviceIsRefusedNamingTheOption) {
  for (const std::string& want : {std::string("99999999999999999999"), std::string("4096"), std::string("no such gpu")}) {
    ContextOptions o;
    o.device = want;
    expect_refused([&] { Context c(o); }, Status::invalid_argument, "device (ContextOptions::device, $VKGMM_DEVICE): ");
  }
  ContextOptions first;
  first.device = "0000000000000";  // index 0, however many zeros
  ContextOptions zero;
  zero.device = "0";
  EXPECT_EQ(make_context(first).info().name, make_context(zero).info().name);
}

TEST_F(DeviceTest, OversizedOperandIsUnsupportedNotACrash) {
  GmmProblem p = good_gmm();
  // rhs [2, k, n] f32 past what this device binds in its most parts of a binding each, and past what a
  // texel view reaches, by 64 KiB or more (k within a CPU driver's loop budget).
  const DeviceInfo& info = ctx().info();
  p.k = 1 << 14;
  const uint64_t most =
      std::max<uint64_t>(uint64_t(kMaxParts) * split_part_bytes(info), texel_reach_bytes(info, DType::f32)) + (64 << 10);
  p.n = int64_t((most + 2 * 4 * uint64_t(p.k) - 1) / (2 * 4 * uint64_t(p.k)));
  expect_refused([&] { GmmPlan(ctx(), p); }, Status::unsupported, "maxStorageBufferRange");
}

}  // namespace
}  // namespace vkgmm::test
