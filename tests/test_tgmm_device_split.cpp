// tgmm's split reduction with the group sizes on the device (shaders/tgmm_split.glsl), planned on lavapipe
// as for a discrete GPU (a CPU device never splits) and run there: the metadata build takes the host
// path's rule on the sizes it finds, so each case gives the host path's bits, which split the same long
// groups (checked), and the reference's values; the backward's weight gradient is in
// tests/test_tgmm_split.cpp. Sizes that break the contract split as the sizes taken (negative as 0,
// offsets clamped at m) and touch nothing outside the views.
#include <cstring>
#include <string>

#include "gpu_harness.hpp"
#include "matrix_harness.hpp"

namespace vkgmm::test {
namespace {

int64_t total_rows(const std::vector<int32_t>& sizes) {
  int64_t m = 0;
  for (int32_t s : sizes) m += s;
  return m;
}

bool splits_on_the_device(Context& c, TgmmProblem p) {
  p.device_group_sizes.count = int64_t(p.group_sizes.size());
  p.group_sizes.clear();
  const std::vector<uint32_t> k = op_constants(TgmmPlan(c, p));
  return k.size() > VKGMM_ID_TGMM_SPLIT && k[VKGMM_ID_TGMM_SPLIT] != 0;
}

// The device path against the host path (run_tgmm_device: the host path's tiling, a clean status word),
// bit for bit, twice; the host path split (`host_splits`) or not; both near the reference.
void expect_host_bits(Context& c, const TgmmProblem& p, bool host_splits, uint32_t seed) {
  const int64_t G = int64_t(p.group_sizes.size());
  const int64_t groups = p.num_actual_groups < 0 ? G - p.group_offset : p.num_actual_groups;
  EXPECT_EQ(TgmmPlan(c, p).workspace_bytes() > 0, host_splits) << "the host path's split";
  ASSERT_TRUE(splits_on_the_device(c, p));
  std::mt19937 rng(seed);
  const auto lhs = random_values(size_t(p.k) * p.m, p.lhs_type, rng);
  const auto rhs = random_values(size_t(p.m) * p.n, p.rhs_type, rng);
  std::vector<float> ex;
  if (p.existing_out) ex = random_values(size_t(groups) * p.k * p.n, p.out_type, rng);
  const std::vector<float> host = run_tgmm(c, p, lhs, rhs, ex);
  const std::vector<float> dev = run_tgmm_device(c, p, lhs, rhs, ex);
  EXPECT_TRUE(same_bits(dev, host)) << "the host path's bits";
  EXPECT_TRUE(same_bits(run_tgmm_device(c, p, lhs, rhs, ex), dev)) << "a second run";
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(dev, reference::tgmm(p, lhs, rhs, ex), tol.atol * 4, tol.rtol));
}

TgmmProblem problem(const std::vector<int32_t>& sizes, int64_t k, int64_t n) {
  TgmmProblem p;
  p.group_sizes = sizes;
  p.m = total_rows(sizes);
  p.k = k;
  p.n = n;
  return p;
}

// Three long groups (two adjacent) among short and empty ones; one long group; like sizes (no split).
const std::vector<int32_t> kThreeLong = {1200, 1100, 5, 9, 0, 14, 3, 1000, 6, 11, 2, 7};
const std::vector<int32_t> kOneLong = {3, 0, 1500, 40, 12, 0, 25};
const std::vector<int32_t> kEven = {300, 280, 0, 310, 295};

// 100 groups (each of the metadata build's 32 lanes takes several): short ones, empty ones and `long_groups`
// long ones spread among them.
std::vector<int32_t> many_groups(int long_groups) {
  std::vector<int32_t> sizes(100);
  for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = g % 7 == 3 ? 0 : int32_t(3 + g % 9);
  for (int i = 0; i < long_groups; ++i) sizes[size_t(7 + i * 97 % 93)] = 700 + 40 * i;
  return sizes;
}

TEST(TgmmDeviceSplit, TheHostPathsBits) {
  Context c = gpu_planned_context();
  for (Schedule s : {Schedule::direct, Schedule::shared}) {
    SCOPED_TRACE(schedule_name(s));
    TgmmProblem p = problem(kThreeLong, 24, 20);
    p.schedule = s;
    expect_host_bits(c, p, true, 21);
    p = problem(kOneLong, 16, 12);
    p.schedule = s;
    p.lhs_mk = true;
    expect_host_bits(c, p, true, 22);
    p = problem(kEven, 16, 16);
    p.schedule = s;
    expect_host_bits(c, p, false, 23);
  }
  // Many groups: three long ones share the 16 slots (at most 5 chunks each);
  // nine long ones leave fewer than 2 each, and neither path splits.
  expect_host_bits(c, problem(many_groups(3), 12, 8), true, 29);
  expect_host_bits(c, problem(many_groups(9), 12, 8), false, 30);
}

// existing_out (added by the combine for split groups) in a 16-bit out, odd k and n; a window of the
// groups; the persistent grid; out [n, k].
TEST(TgmmDeviceSplit, ExistingOutWindowsGridsAndLayouts) {
  Context c = gpu_planned_context();
  {
    SCOPED_TRACE("existing_out, bf16 out, odd k and n");
    TgmmProblem p = problem(kThreeLong, 13, 7);
    p.existing_out = true;
    p.out_type = DType::bf16;
    expect_host_bits(c, p, true, 24);
  }
  {
    SCOPED_TRACE("a window: groups 1 .. 8");
    TgmmProblem p = problem(kThreeLong, 16, 12);
    p.group_offset = 1, p.num_actual_groups = 8;
    expect_host_bits(c, p, true, 25);
  }
  {
    SCOPED_TRACE("the persistent grid, out [n, k]");
    TgmmProblem p = problem(kOneLong, 20, 16);
    p.grid = Grid::persistent;
    p.out_nk = true;
    expect_host_bits(c, p, true, 26);
  }
}

// Hostile sizes with a long group among them: the split of the sizes taken, the host path's bits for
// those, the status word, and every operand, the sizes, the workspace and the status word between guards.
TEST(TgmmDeviceSplit, HostileSizesStayInsideTheViews) {
  Context c = gpu_planned_context();
  const int64_t m = 900;
  const std::vector<std::vector<int32_t>> hostile = {
      {20, -7, 800, 10, 0, 30},                    // a negative size
      {10, 850, 15, 400, 3, 3},                    // sum past m: the fourth group clamped
      {-5, 450, 3, 440, 2, 10},                    // two long groups, a negative size before them
      {-INT32_MAX - 1, INT32_MAX, 5, 5, 5, 5},     // the most negative, then more than m
      {880, 0, 0, 0, 0, 20},                       // exactly m
  };
  for (const auto& sizes : hostile) {
    SCOPED_TRACE(std::to_string(sizes[0]) + ", " + std::to_string(sizes[1]) + ", ...");
    TgmmProblem host;
    host.m = m;
    host.k = 12;
    host.n = 8;
    uint32_t want_status = 0;
    host.group_sizes = sizes_taken(sizes, m, want_status);
    std::mt19937 rng(28);
    const auto lhs = random_values(size_t(host.k) * m, DType::f32, rng);
    const auto rhs = random_values(size_t(m) * host.n, DType::f32, rng);
    const std::vector<float> want = run_tgmm(c, host, lhs, rhs);

    TgmmProblem dev = host;
    dev.tiling = TilingChoice::of(TgmmPlan(c, host).tiling());
    dev.group_sizes.clear();
    dev.device_group_sizes.count = int64_t(sizes.size());
    const TgmmPlan plan(c, dev);
    ASSERT_TRUE(splits_on_the_device(c, host));
    Guarded l = guarded_floats(c, lhs), r = guarded_floats(c, rhs);
    Guarded o(c, want.size() * 4), s(c, sizes.size() * 4), status(c, 4), work(c, plan.workspace_bytes());
    s.set(sizes.data(), sizes.size() * 4);
    c.submit_and_wait([&](VkCommandBuffer cb) {
      plan.record(cb, {l.view(), r.view(), o.view(), {}, s.view(), work.view(), status.view()});
    });
    EXPECT_TRUE(same_bits(floats(o), want));
    uint32_t got_status = 0;
    std::memcpy(&got_status, status.get().data(), 4);
    EXPECT_EQ(got_status, want_status);
    for (const Guarded* g : {&l, &r, &o, &s, &status, &work}) EXPECT_TRUE(g->guards_intact());
  }
}

}  // namespace
}  // namespace vkgmm::test
