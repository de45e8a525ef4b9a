// The persistent grid (Grid::persistent): a fixed count of workgroups, each looping over the op's work
// items, computes every item as the per-visit grid's workgroup for it does, so the results are the same
// bits whatever the count: one workgroup, a few (fewer than the items, none dividing them), more than
// the items; group sizes on the host and on the device (the loop bound read where the metadata build
// wrote it, the operands between poisoned guards), empty groups, both schedules, tgmm, routing by ids
// with the fused epilogue. The whole gmm / tgmm / backward / routing / block-format matrix also runs on
// this grid (tests/CMakeLists.txt, the ".persistent" tests).
#include <cstring>

#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

constexpr uint32_t kWorkgroupCounts[] = {1, 1000};  // 3 (the default here is 2): the ".persistent" tests

Context grid_context(Grid grid, uint32_t workgroups = 0) {
  ContextOptions o;
  o.grid = grid;
  o.persistent_workgroups = workgroups;
  return DeviceTest::make_context(o);
}

// Runs `plan` on f32 operands between guards, with the group sizes in a device buffer (dev problems);
// expects the guards intact and a clean status word; returns out.
template <class Plan, class Operands>
std::vector<float> run_guarded(Context& c, const Plan& plan, const std::vector<int32_t>& sizes,
                               const std::vector<float>& lhs, const std::vector<float>& rhs,
                               const std::vector<float>& ex, size_t out_count) {
  Guarded l = guarded_floats(c, lhs), r = guarded_floats(c, rhs), e = guarded_floats(c, ex);
  Guarded o(c, out_count * 4), s(c, sizes.size() * 4), status(c, 4), work(c, plan.workspace_bytes());
  s.set(sizes.data(), sizes.size() * 4);
  c.submit_and_wait([&](VkCommandBuffer cb) {
    plan.record(cb, Operands{l.view(), r.view(), o.view(), e.view(), s.view(), work.view(), status.view()});
  });
  uint32_t got_status = ~0u;
  std::memcpy(&got_status, status.get().data(), 4);
  EXPECT_EQ(got_status, 0u) << "device status word";
  for (const Guarded* g : {&l, &r, &e, &o, &s, &status, &work}) EXPECT_TRUE(g->guards_intact());
  return floats(o);
}

void expect_no_validation_messages(Context& c) {
  for (const auto& m : c.take_validation_messages()) ADD_FAILURE() << "validation message: " << m;
}

template <class Problem>
Problem on_device(const Problem& host, Tiling tiling) {
  Problem dev = host;
  dev.tiling = TilingChoice::of(tiling);
  dev.device_group_sizes.count = static_cast<int64_t>(host.group_sizes.size());
  dev.group_sizes.clear();
  return dev;
}

// On every persistent workgroup count: run_host(context) and the plan on the device path (the per-visit
// plan's tiling) give `want`, the per-visit grid's bits.
template <class Plan, class Operands, class Problem, class RunHost>
void expect_every_count_gives(Context& per_visit, const Problem& p, const std::vector<float>& lhs,
                              const std::vector<float>& rhs, const std::vector<float>& ex,
                              const std::vector<float>& want, RunHost run_host) {
  const Tiling tiling = Plan(per_visit, p).tiling();
  for (uint32_t w : kWorkgroupCounts) {
    Context c = grid_context(Grid::persistent, w);
    EXPECT_TRUE(same_bits(run_host(c), want)) << w << " workgroups, host sizes";
    const Plan plan(c, on_device(p, tiling));
    EXPECT_TRUE(same_bits(run_guarded<Plan, Operands>(c, plan, p.group_sizes, lhs, rhs, ex, want.size()), want))
        << w << " workgroups, device sizes";
    expect_no_validation_messages(c);
  }
}

TEST(PersistentGrid, GmmGivesThePerVisitBitsOnAnyWorkgroupCount) {
  Context per_visit = grid_context(Grid::per_visit);
  for (Schedule schedule : {Schedule::direct, Schedule::shared}) {
    std::mt19937 rng(11);
    GmmProblem p;
    p.m = 300;
    p.k = 24;
    p.n = 40;
    p.group_sizes = make_group_sizes(Sizes::empty_ends, 12, 280, rng);  // and rows past the groups
    p.group_offset = 1;
    p.num_rhs_groups = 9;
    p.existing_out = true;
    p.schedule = schedule;
    p.tiling = TilingChoice::of(Tiling{32, 16, 16});  // many visits and n tiles
    const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
    const auto rhs = random_values(9 * size_t(p.k) * p.n, DType::f32, rng);
    const auto ex = random_values(size_t(p.m) * p.n, DType::f32, rng);
    const std::vector<float> want = run_gmm(per_visit, p, lhs, rhs, ex);
    EXPECT_TRUE(all_close(want, reference::gmm(p, lhs, rhs, ex), 1e-3, 1e-5));
    expect_every_count_gives<GmmPlan, GmmOperands>(per_visit, p, lhs, rhs, ex, want,
                                                   [&](Context& c) { return run_gmm(c, p, lhs, rhs, ex); });
  }
}

TEST(PersistentGrid, TgmmGivesThePerVisitBitsOnAnyWorkgroupCount) {
  Context per_visit = grid_context(Grid::per_visit);
  for (Schedule schedule : {Schedule::direct, Schedule::shared}) {
    std::mt19937 rng(12);
    TgmmProblem p;
    p.m = 300;
    p.k = 20;
    p.n = 36;
    p.group_sizes = make_group_sizes(Sizes::empty_ends, 12, 300, rng);
    p.group_offset = 2;
    p.num_actual_groups = 8;
    p.existing_out = true;
    p.schedule = schedule;
    p.tiling = TilingChoice::of(Tiling{32, 16, 16});
    const auto lhs = random_values(size_t(p.k) * p.m, DType::f32, rng);
    const auto rhs = random_values(size_t(p.m) * p.n, DType::f32, rng);
    const auto ex = random_values(8 * size_t(p.k) * p.n, DType::f32, rng);
    const std::vector<float> want = run_tgmm(per_visit, p, lhs, rhs, ex);
    EXPECT_TRUE(all_close(want, reference::tgmm(p, lhs, rhs, ex), 1e-3, 1e-5));
    expect_every_count_gives<TgmmPlan, TgmmOperands>(per_visit, p, lhs, rhs, ex, want,
                                                     [&](Context& c) { return run_tgmm(c, p, lhs, rhs, ex); });
  }
}

// Routed by ids, combined with the routing weights, bias and SwiGLU: the visit list and its count are
// the routing build's.
TEST(PersistentGrid, RoutedGmmGivesThePerVisitBits) {
  Context per_visit = grid_context(Grid::per_visit);
  std::mt19937 rng(13);
  GmmProblem p;
  p.m = 40;  // tokens
  p.k = 16;
  p.n = 48;  // [gate | up]
  p.num_rhs_groups = 6;
  p.routing.top_k = 2;
  p.routing.combine = true;
  p.routing.num_experts = 6;
  p.epilogue.bias = true;
  p.epilogue.activation = Activation::swiglu;
  p.existing_out = true;
  std::uniform_int_distribution<int32_t> expert(-1, 5);
  std::vector<int32_t> ids(size_t(p.m) * 2);
  for (auto& id : ids) id = expert(rng);
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(6 * size_t(p.k) * p.n, DType::f32, rng);
  const auto weights = random_values(ids.size(), DType::f32, rng);
  const auto ex = random_values(size_t(p.m) * p.n / 2, DType::f32, rng);
  const auto bias = random_values(6 * size_t(p.n), DType::f32, rng);
  const std::vector<float> want = run_gmm_routed(per_visit, p, lhs, rhs, ids, weights, ex, bias);
  EXPECT_TRUE(all_close(want, reference::gmm_routed(p, lhs, rhs, ids, weights, ex, bias), 1e-3, 1e-5));
  for (uint32_t w : kWorkgroupCounts) {
    Context c = grid_context(Grid::persistent, w);
    EXPECT_TRUE(same_bits(run_gmm_routed(c, p, lhs, rhs, ids, weights, ex, bias), want)) << w << " workgroups";
    expect_no_validation_messages(c);
  }
}

// lavapipe ends every loop of an invocation once it has run 65535 iterations in all: one workgroup
// looping over every item of these (40 visits of 2047 scalar K steps; 4 groups of 70000 rows) would cross
// that, so on a CPU device the persistent grid takes enough workgroups (or the per-item grid) instead.
TEST(PersistentGrid, LongLoopsStayWithinTheDriversBudget) {
  Context per_visit = grid_context(Grid::per_visit), one = grid_context(Grid::persistent, 1);
  std::mt19937 rng(15);
  GmmProblem p;
  p.m = 640;
  p.k = 2047;  // not a multiple of 4: scalar steps
  p.n = 8;
  p.group_sizes = {320, 320};
  p.schedule = Schedule::direct;
  p.tiling = TilingChoice::of(Tiling{16, 16, 8});
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(2 * size_t(p.k) * p.n, DType::f32, rng);
  const std::vector<float> got = run_gmm(one, p, lhs, rhs);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), 1e-3, 1e-4));  // a loop cut short shows here
  EXPECT_TRUE(same_bits(got, run_gmm(per_visit, p, lhs, rhs)));
  TgmmProblem t;
  t.m = 280000;
  t.k = t.n = 4;
  t.group_sizes = {70000, 70000, 70000, 70000};
  t.schedule = Schedule::direct;
  const auto tl = random_values(size_t(t.k) * t.m, DType::f32, rng);
  const auto tr = random_values(size_t(t.m) * t.n, DType::f32, rng);
  const std::vector<float> got_t = run_tgmm(one, t, tl, tr);
  EXPECT_TRUE(all_close(got_t, reference::tgmm(t, tl, tr), 2e-2, 1e-4));  // sums of 70000 products
  EXPECT_TRUE(same_bits(got_t, run_tgmm(per_visit, t, tl, tr)));
  expect_no_validation_messages(one);
}

// The problem's grid is taken where the context forces none; a value that is no Grid is refused, named.
TEST(PersistentGrid, ProblemGridAndItsRefusal) {
  Context automatic = grid_context(Grid::automatic);
  std::mt19937 rng(14);
  GmmProblem p;
  p.m = 70;
  p.k = 8;
  p.n = 12;
  p.group_sizes = {30, 0, 40};
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(3 * size_t(p.k) * p.n, DType::f32, rng);
  p.grid = Grid::persistent;
  EXPECT_TRUE(all_close(run_gmm(automatic, p, lhs, rhs), reference::gmm(p, lhs, rhs), 1e-3, 1e-5));
  p.grid = static_cast<Grid>(7);
  expect_invalid_argument([&] { GmmPlan plan(automatic, p); }, "gmm: grid: 7 is not");
  TgmmProblem t;
  t.m = 4;
  t.k = t.n = 4;
  t.group_sizes = {4};
  t.grid = static_cast<Grid>(7);
  expect_invalid_argument([&] { TgmmPlan plan(automatic, t); }, "tgmm: grid: 7 is not");
  expect_no_validation_messages(automatic);
}

}  // namespace
}  // namespace vkgmm::test
