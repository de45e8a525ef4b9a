// lavapipe ends an invocation's loops after 65535 iterations in all (tiling.hpp, kCpuLoopIterations) and
// returns partial results. On CPU devices every plan whose loops could pass that is refused, naming the
// argument, before any GPU work: tgmm's walk over a group's rows (and the backward's d_rhs, a tgmm), the
// metadata build's loops over slots, experts and visits, the combine's over a token's slots. Each refusal
// is tested at the smallest shape past the budget (planned only: nothing is allocated) and the largest
// shape inside it runs and matches the reference. The bounds' arithmetic mirrors the shaders' loops
// (host/tgmm_plan.cpp, host/metadata_loops.cpp); the shapes below are where it crosses 65535.
#include "gpu_harness.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm::test {
namespace {

class LoopBudget : public DeviceTest {
 protected:
  void SetUp() override {
    if (ctx().info().type != VK_PHYSICAL_DEVICE_TYPE_CPU)
      GTEST_SKIP() << "the loop budget (65535 iterations per invocation) is a CPU driver's, checked on CPU devices only";
  }
};

// Expects f to throw Error(unsupported) naming the loop budget and `needle`.
template <typename F>
void expect_past_budget(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "planned; expected a refusal mentioning '" << needle << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.status(), Status::unsupported) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message: " << what;
    EXPECT_NE(what.find("loop iterations"), std::string::npos) << "message: " << what;
  }
}

// Top-k reads a token's logits top_k + 2 times in one invocation; with each loop's exit test, a token of
// top_k = 1 over E experts takes 3 * E + 9 iterations: E = 21843 passes the budget and is refused, naming
// both and saying what to change (there is no reduction to split through existing_out). The largest E
// that fits runs, its top logit the last expert's: a walk cut short would miss it.
TEST_F(LoopBudget, TopKPastItIsRefused) {
  Context& c = ctx();
  TopKProblem p;
  p.tokens = 3;
  p.top_k = 1;
  p.experts = 21843;
  expect_past_budget([&] { TopKPlan(c, p); }, "top_k = 1 over experts = 21843");
  try {
    TopKPlan plan(c, p);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("existing_out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fewer experts"), std::string::npos) << e.what();
  }
  p.experts = 21842;
  const TopKPlan plan(c, p);
  std::vector<float> logits(size_t(p.tokens * p.experts), -1.0f);
  for (int64_t t = 0; t < p.tokens; ++t) logits[size_t((t + 1) * p.experts - 1 - t)] = 2.0f;
  Buffer l = upload(c, DType::f32, logits), ids = poisoned(c, size_t(p.tokens) * 4), w = poisoned(c, size_t(p.tokens) * 4);
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), ids.view(), w.view()}); });
  const std::vector<float> weights = download(w, DType::f32, size_t(p.tokens));
  std::vector<int32_t> got(size_t(p.tokens));
  ids.download(got.data(), got.size() * 4);
  for (int64_t t = 0; t < p.tokens; ++t) {
    EXPECT_EQ(got[size_t(t)], int32_t(p.experts - 1 - t)) << "token " << t;
    EXPECT_EQ(weights[size_t(t)], 1.0f) << "token " << t << " (renormalized over its one slot)";
  }
}

// tgmm (or the gmm whose backward runs one) with the group sizes around one large group, n odd so that
// the kernel loads one row per iteration (scalar loads: what the budget is checked for, the most).
template <class Problem>
Problem around(int32_t large) {
  Problem p;
  p.group_sizes = {3, large, 4};
  p.m = large + 7;
  p.k = 3;
  p.n = 5;
  return p;
}
TgmmProblem tgmm_around(int32_t large) { return around<TgmmProblem>(large); }
GmmProblem gmm_around(int32_t large) { return around<GmmProblem>(large); }

// On the direct schedule a group of r rows takes r + 1 iterations, and the persistent grid's loop one
// more: 65533 rows is the most. (The driver's real cut, measured without the check: 65535 rows summed
// right, 65536 summed 65535 ones.)
constexpr int32_t kMostRows = 65533;

TEST_F(LoopBudget, TgmmGroupsPastItAreRefused) {
  Context& c = ctx();
  expect_past_budget([&] { TgmmPlan(c, tgmm_around(kMostRows + 1)); }, "tgmm: group_sizes[1] = 65534 rows");
  // Only the active groups are walked: the window past the large group plans.
  TgmmProblem window = tgmm_around(kMostRows + 1);
  window.group_offset = 2;
  EXPECT_NO_THROW(TgmmPlan(c, window));
  // Sizes on the device: any group may hold all m rows.
  TgmmProblem device = tgmm_around(0);
  device.group_sizes = {};
  device.device_group_sizes.count = 3;
  device.m = kMostRows + 1;
  expect_past_budget([&] { TgmmPlan(c, device); }, "tgmm: m = 65534 rows (device_group_sizes");
  device.m = kMostRows;
  EXPECT_NO_THROW(TgmmPlan(c, device));
  // The backward's d_rhs is a tgmm.
  expect_past_budget([&] { GmmBackwardPlan(c, gmm_around(kMostRows + 1)); }, "tgmm: group_sizes[1] = 65534 rows");
  GmmProblem forward = gmm_around(0);
  forward.group_sizes = {};
  forward.device_group_sizes.count = 3;
  forward.m = kMostRows + 1;
  expect_past_budget([&] { GmmBackwardPlan(c, forward); }, "tgmm: m = 65534 rows (device_group_sizes");
}

TEST_F(LoopBudget, TgmmGroupsInsideItRunCorrectly) {
  Context& c = ctx();
  std::mt19937 rng(7);
  const TgmmProblem p = tgmm_around(kMostRows);
  const auto lhs = random_values(size_t(p.k * p.m), DType::f32, rng);
  const auto rhs = random_values(size_t(p.m * p.n), DType::f32, rng);
  const auto want = reference::tgmm(p, lhs, rhs);
  // A sum of 65533 products: the tolerance grows with it (tolerance_for's k scaling).
  EXPECT_TRUE(all_close(run_tgmm(c, p, lhs, rhs), want, 2e-2, 1e-4));
  // On the device the bound is m: the large group with a few rows beside it.
  const TgmmProblem d = tgmm_around(kMostRows - 7);
  const auto d_lhs = random_values(size_t(d.k * d.m), DType::f32, rng);
  const auto d_rhs = random_values(size_t(d.m * d.n), DType::f32, rng);
  EXPECT_TRUE(all_close(run_tgmm_device(c, d, d_lhs, d_rhs), reference::tgmm(d, d_lhs, d_rhs), 2e-2, 1e-4));

  const GmmProblem f = gmm_around(kMostRows);
  const auto x = random_values(size_t(f.m * f.k), DType::f32, rng);
  const auto w = random_values(size_t(3 * f.k * f.n), DType::f32, rng);
  const auto d_out = random_values(size_t(f.m * f.n), DType::f32, rng);
  const reference::Gradients got = run_backward(c, f, x, w, d_out), ref = reference::gmm_backward(f, x, w, d_out);
  EXPECT_TRUE(all_close(got.d_lhs, ref.d_lhs, 1e-3, 1e-5));
  EXPECT_TRUE(all_close(got.d_rhs, ref.d_rhs, 2e-2, 1e-4));
}

// With 4-element loads (n a multiple of 4) an iteration takes 4 rows: 262104 is the most. An rhs at an
// offset that is not a multiple of 4 elements would fall back to scalar loads, one row per iteration:
// check() and record() refuse it, before anything is recorded.
constexpr int32_t kMostRowsVec4 = 262104;

TgmmProblem vec4_tgmm_around(int32_t large) {
  TgmmProblem p = tgmm_around(large);
  p.k = p.n = 4;
  return p;
}

TEST_F(LoopBudget, TgmmGroupsWithVectorLoads) {
  Context& c = ctx();
  expect_past_budget([&] { TgmmPlan(c, vec4_tgmm_around(kMostRowsVec4 + 1)); },
                     "tgmm: group_sizes[1] = 262105 rows takes");
  const TgmmProblem p = vec4_tgmm_around(kMostRowsVec4);
  std::mt19937 rng(9);
  const auto lhs = random_values(size_t(p.k * p.m), DType::f32, rng);
  const auto rhs = random_values(size_t(p.m * p.n), DType::f32, rng);
  EXPECT_TRUE(all_close(run_tgmm(c, p, lhs, rhs), reference::tgmm(p, lhs, rhs), 5e-2, 1e-4));

  const TgmmPlan plan(c, p);
  const OperandSizes s = plan.sizes();
  Buffer l = c.create_buffer(s.lhs), r = c.create_buffer(s.rhs + 4), o = c.create_buffer(s.out);
  const TgmmOperands unaligned{l.view(), r.view(4, s.rhs), o.view()};
  const std::string needle = "group_sizes[1] = 262104 rows with scalar loads (rhs's offset not a multiple of 4";
  expect_past_budget([&] { plan.check(unaligned); }, needle);
  expect_past_budget([&] { c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, unaligned); }); }, needle);
  // Where the scalar loads fit too, the unaligned rhs is taken.
  const TgmmPlan small(c, vec4_tgmm_around(kMostRows));
  const OperandSizes ss = small.sizes();
  EXPECT_NO_THROW(small.check({l.view(0, ss.lhs), r.view(4, ss.rhs), o.view(0, ss.out)}));
}

Context persistent_context(uint32_t workgroups) {
  ContextOptions o;
  o.grid = Grid::persistent;
  o.persistent_workgroups = workgroups;
  return DeviceTest::make_context(o);
}

// On the persistent grid a workgroup strides over the items, and a group's blocks are consecutive ones:
// with 4 workgroups over 8 groups' single blocks, workgroup 0 walks groups 0 and 4. Each fits the budget
// alone (40000 rows), together they do not: the plan keeps one workgroup per block.
TEST_F(LoopBudget, TgmmPersistentWorkgroupsStayInsideIt) {
  Context c = persistent_context(4);
  TgmmProblem p;
  p.group_sizes = {40000, 1, 0, 2, 40000, 3, 0, 4};
  p.m = 80010;
  p.k = 3;
  p.n = 5;
  std::mt19937 rng(5);
  const auto lhs = random_values(size_t(p.k * p.m), DType::f32, rng);
  const auto rhs = random_values(size_t(p.m * p.n), DType::f32, rng);
  EXPECT_TRUE(all_close(run_tgmm(c, p, lhs, rhs), reference::tgmm(p, lhs, rhs), 2e-2, 1e-4));
}

// gmm's persistent grid must hold the scalar loads that lhs at an offset that is not a multiple of 4
// elements falls back to, 4 times the iterations of the planned ones: 60 visits of k = 4096 on one
// workgroup asked for.
TEST_F(LoopBudget, GmmPersistentWorkgroupsHoldTheScalarFallback) {
  Context c = persistent_context(1);
  GmmProblem p;
  p.group_sizes = {960};
  p.m = 960;
  p.k = 4096;
  p.n = 4;
  p.schedule = Schedule::direct;
  p.tiling = TilingChoice::of(Tiling{16, 16, 4});
  std::mt19937 rng(3);
  const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
  const auto rhs = random_values(size_t(p.k * p.n), DType::f32, rng);
  const GmmPlan plan(c, p);
  const OperandSizes s = plan.sizes();
  Buffer l = c.create_buffer(s.lhs + 4), r = c.create_buffer(s.rhs), out = c.create_buffer(s.out);
  l.upload(lhs.data(), s.lhs, 4);
  r.upload(rhs.data(), s.rhs);
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(4, s.lhs), r.view(), out.view()}); });
  std::vector<float> got(size_t(p.m * p.n));
  out.download(got.data(), s.out);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), 1e-2, 1e-4));
}

// gmm routed by expert ids: T tokens, top_k slots each, over e_local experts, 64-row tiles.
GmmProblem routed(int64_t T, int64_t top_k, int64_t e_local, bool combine = false) {
  GmmProblem p;
  p.m = T;
  p.k = 4;
  p.n = 4;
  p.num_rhs_groups = e_local;
  p.routing.top_k = top_k;
  p.routing.combine = combine;
  p.tiling = TilingChoice::of(Tiling{64, 4, 4});
  return p;
}

// The routing build's busiest invocation counts and places 1 / 32 of the slots (twice 1 / 32 in all) and
// writes the visits, 1 / 64 of them per row: 829856 slots over 8 experts take 65535 iterations.
constexpr int64_t kMostSlots = 829856;
// Its scans over the 32 lanes per expert, where the slots are more than its 32 invocations (33 here; with
// fewer each places one slot, its loops over the slots): 19551 local experts take 65495.
constexpr int64_t kMostExperts = 19551;
constexpr int64_t kCountedSlots = 33;
// gmm with device group sizes, 16-row tiles: the visits of 1013632 rows take 65535.
constexpr int64_t kMostDeviceRows = 1013632;
// The combine's sum over a token's slots: top_k = 65532 takes 65535.
constexpr int64_t kMostTopK = 65532;

GmmProblem device_sizes(int64_t m) {
  GmmProblem p;
  p.m = m;
  p.k = 4;
  p.n = 4;
  p.device_group_sizes.count = 1;
  p.tiling = TilingChoice::of(Tiling{16, 4, 4});
  return p;
}

TEST_F(LoopBudget, MetadataBuildsPastItAreRefused) {
  Context& c = ctx();
  expect_past_budget([&] { GmmPlan(c, routed(kMostSlots + 1, 1, 8)); },
                     "gmm: the metadata build for T * top_k = 829857 slots");
  expect_past_budget([&] { GmmPlan(c, routed(kCountedSlots, 1, kMostExperts + 1)); },
                     "gmm: the metadata build for num_rhs_groups = 19552 local experts");
  expect_past_budget([&] { GmmPlan(c, device_sizes(kMostDeviceRows + 1)); },
                     "gmm: the metadata build for m = 1013633 rows in m tiles of 16");
  expect_past_budget([&] { GmmPlan(c, routed(1, kMostTopK + 1, 4, true)); },
                     "gmm: the combine of top_k = 65533 slots per token");
  // The backward's d_lhs is a gmm with the forward's device sizes.
  expect_past_budget([&] { GmmBackwardPlan(c, device_sizes(kMostDeviceRows + 1)); },
                     "the metadata build for m = 1013633 rows");
}

void expect_routed_matches_reference(Context& c, const GmmProblem& p, std::mt19937& rng) {
  const int64_t slots = p.m * p.routing.top_k;
  const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
  const auto rhs = random_values(size_t(p.num_rhs_groups * p.k * p.n), DType::f32, rng);
  // Every slot to expert 0: the build's first lane writes every visit, its most (with ids spread over
  // the experts, 900000 slots still came out right; with these, 845000 did not).
  const std::vector<int32_t> ids(size_t(slots), 0);
  std::vector<float> weights;
  if (p.routing.combine) weights = random_values(size_t(slots), DType::f32, rng);
  const auto want = reference::gmm_routed(p, lhs, rhs, ids, weights);
  // The combine sums top_k slots per token.
  const double atol = p.routing.combine ? 1e-5 * double(p.routing.top_k) + 1e-3 : 1e-3;
  EXPECT_TRUE(all_close(run_gmm_routed(c, p, lhs, rhs, ids, weights), want, atol, 1e-5));
}

TEST_F(LoopBudget, MetadataBuildsInsideItRunCorrectly) {
  Context& c = ctx();
  std::mt19937 rng(11);
  expect_routed_matches_reference(c, routed(kMostSlots, 1, 8), rng);
  expect_routed_matches_reference(c, routed(kCountedSlots, 1, kMostExperts), rng);
  expect_routed_matches_reference(c, routed(1, kMostTopK, 4, true), rng);
  const GmmProblem p = device_sizes(kMostDeviceRows);
  GmmProblem host = p;
  host.device_group_sizes = {};
  host.group_sizes = {int32_t(kMostDeviceRows)};
  const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
  const auto rhs = random_values(size_t(p.k * p.n), DType::f32, rng);
  EXPECT_TRUE(all_close(run_gmm_device(c, host, lhs, rhs), reference::gmm(host, lhs, rhs), 1e-3, 1e-5));
}

}  // namespace
}  // namespace vkgmm::test
