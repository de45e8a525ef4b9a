// The gmm backward on the device: against the reference, and against central finite differences.
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>

#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

struct BackwardCase {
  bool transpose;
  bool shard;
  Schedule schedule;
};

class BackwardTest : public DeviceTest, public ::testing::WithParamInterface<BackwardCase> {};

TEST_P(BackwardTest, MatchesReference) {
  const BackwardCase& c = GetParam();
  std::mt19937 rng(31 + c.transpose + 2 * c.shard);
  GmmProblem p;
  p.m = 70;
  p.k = 18;
  p.n = 14;
  p.group_sizes = make_group_sizes(Sizes::empty_ends, 6, 60, rng);  // 10 rows past the groups
  p.transpose_rhs = c.transpose;
  p.schedule = c.schedule;
  int64_t g_local = 6;
  if (c.shard) {
    p.group_offset = 2;
    p.num_rhs_groups = g_local = 3;
  }
  auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto rhs = random_values(size_t(g_local) * p.k * p.n, DType::f32, rng);
  auto d_out = random_values(size_t(p.m) * p.n, DType::f32, rng);
  auto got = run_backward(ctx(), p, lhs, rhs, d_out);
  auto want = reference::gmm_backward(p, lhs, rhs, d_out);
  EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, 1e-3, 1e-5)) << "d_lhs";
  EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, 1e-3, 1e-5)) << "d_rhs";
  const reference::Gradients dev = run_backward_device(ctx(), p, lhs, rhs, d_out);
  EXPECT_TRUE(same_bits(dev.d_lhs, got.d_lhs)) << "d_lhs, device group sizes";
  EXPECT_TRUE(same_bits(dev.d_rhs, got.d_rhs)) << "d_rhs, device group sizes";
}

INSTANTIATE_TEST_SUITE_P(Variants, BackwardTest,
                         ::testing::Values(BackwardCase{false, false, Schedule::direct},
                                           BackwardCase{true, false, Schedule::shared},
                                           BackwardCase{false, true, Schedule::shared},
                                           BackwardCase{true, true, Schedule::direct}),
                         [](const auto& info) {
                           return std::string(info.param.transpose ? "T" : "N") + (info.param.shard ? "_shard" : "") +
                                  "_" + schedule_name(info.param.schedule);
                         });

// The device's gradients of loss = sum(gmm(lhs, rhs) * w) against central differences of that loss,
// each loss evaluated by the CPU reference's forward (not the library's, which could share a layout
// mistake with its backward).
TEST_F(DeviceTest, BackwardFiniteDifferences) {
  for (bool transpose : {false, true}) {
    std::mt19937 rng(17 + transpose);
    GmmProblem p;
    p.m = 9;
    p.k = 4;
    p.n = 3;
    p.group_sizes = {4, 0, 5};
    p.transpose_rhs = transpose;
    auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
    auto rhs = random_values(size_t(3) * p.k * p.n, DType::f32, rng);
    auto w = random_values(size_t(p.m) * p.n, DType::f32, rng);
    auto loss = [&](const std::vector<float>& l, const std::vector<float>& r) {
      auto out = reference::gmm(p, l, r);
      double s = 0;
      for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * w[i];
      return s;
    };
    auto grads = run_backward(ctx(), p, lhs, rhs, w);  // d_out = dloss/dout = w
    const float h = 1.0f / 64;                           // exact in f32; the loss is linear in each input
    for (size_t i = 0; i < lhs.size(); ++i) {
      auto lp = lhs, lm = lhs;
      lp[i] += h;
      lm[i] -= h;
      EXPECT_NEAR(grads.d_lhs[i], (loss(lp, rhs) - loss(lm, rhs)) / (2 * h), 2e-3) << "d_lhs " << i;
    }
    for (size_t i = 0; i < rhs.size(); ++i) {
      auto rp = rhs, rm = rhs;
      rp[i] += h;
      rm[i] -= h;
      EXPECT_NEAR(grads.d_rhs[i], (loss(lhs, rp) - loss(lhs, rm)) / (2 * h), 2e-3) << "d_rhs " << i;
    }
  }
}

// Device group sizes that break the contract, in the backward: its parts (d_lhs's gmm, d_rhs's tgmm) take
// them as documented, giving the host path's bits on the sizes as the device takes them, and the status
// word (d_rhs's; with frozen block-format weights d_lhs's, whose few rows read the sizes in the kernel)
// says what was found; every view between guard regions, on both grids.
TEST_F(DeviceTest, BackwardTakesHostileDeviceSizes) {
  const std::vector<std::vector<int32_t>> hostile = {{30, -4, 50, 7}, {INT32_MAX, 3, -1, 0}, {0, INT32_MIN, 10, 100}};
  Context& c = ctx();
  for (bool frozen : {false, true})
    for (size_t i = 0; i < hostile.size(); ++i) {
      const std::vector<int32_t>& sizes = hostile[i];
      SCOPED_TRACE(std::string(frozen ? "frozen, " : "") + "sizes " + std::to_string(sizes[0]) + ", " +
                   std::to_string(sizes[1]) + ", ...");
      const GridHook grid(c, GridHook::both(c)[i % 2]);
      std::mt19937 rng(37 + uint32_t(i));
      GmmProblem host;
      host.m = 64, host.k = 32, host.n = 12;
      host.group_offset = 1, host.num_rhs_groups = 2;
      host.transpose_rhs = frozen;  // a block format's blocks run along k
      host.rhs_type = frozen ? DType::q8_0 : DType::f32;
      // Frozen, d_lhs's direct schedule asked for (a GPU's automatic one gives 16 rows per group the shared
      // schedule, whose sizes come from a build): its sizes read in the kernel on any device.
      if (frozen) host.schedule = Schedule::direct;
      uint32_t want_status = 0;
      host.group_sizes = sizes_taken(sizes, host.m, want_status);
      const auto lhs = random_values(size_t(host.m * host.k), DType::f32, rng);
      const auto rhs = random_values(size_t(2 * host.k * host.n), host.rhs_type, rng);
      const auto d_out = random_values(size_t(host.m * host.n), DType::f32, rng);
      GmmProblem dev = host;
      dev.group_sizes.clear();
      dev.device_group_sizes.count = 4;
      const GmmBackwardPlan plan(c, dev);
      EXPECT_EQ(frozen, plan.workspace_bytes() == 0) << "frozen: d_lhs alone, reading the sizes in the kernel";
      // Each part's host path on the sizes taken, with the tiles and schedule the device path's part chose.
      auto on_host = [&](auto problem, const auto& part) {
        problem.group_sizes = host.group_sizes, problem.device_group_sizes = {};
        problem.tiling = TilingChoice::of(part.tiling()), problem.schedule = part.schedule();
        return problem;
      };
      reference::Gradients want;
      want.d_lhs = run_gmm(c, on_host(plan.d_lhs_plan().problem(), plan.d_lhs_plan()), d_out, rhs);
      if (!frozen) want.d_rhs = run_tgmm(c, on_host(plan.d_rhs_plan().problem(), plan.d_rhs_plan()), lhs, d_out);
      const reference::Gradients ref = reference::gmm_backward(host, lhs, rhs, d_out);
      EXPECT_TRUE(all_close(want.d_lhs, ref.d_lhs, 1e-3, 1e-5));
      if (!frozen) EXPECT_TRUE(all_close(want.d_rhs, ref.d_rhs, 1e-3, 1e-5));
      // v's bytes in type t (a block format's own blocks), between guard regions.
      auto guarded_as = [&](DType t, const std::vector<float>& v) {
        const Buffer b = upload(c, t, v);
        Guarded g(c, b.size());
        std::vector<uint8_t> raw(b.size());
        b.download(raw.data(), raw.size());
        g.set(raw.data(), raw.size());
        return g;
      };
      Guarded l = guarded_floats(c, lhs), r = guarded_as(host.rhs_type, rhs), d = guarded_floats(c, d_out);
      Guarded dl(c, want.d_lhs.size() * 4), s(c, 16), status(c, 4);
      s.set(sizes.data(), 16);
      std::optional<Guarded> dr, work;
      GmmBackwardOperands ops{l.view(), r.view(), d.view(), dl.view(), {}, s.view(), {}, status.view()};
      if (!frozen) ops.d_rhs = dr.emplace(c, want.d_rhs.size() * 4).view();
      if (plan.workspace_bytes()) ops.workspace = work.emplace(c, plan.workspace_bytes()).view();
      c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
      EXPECT_TRUE(same_bits(floats(dl), want.d_lhs)) << "d_lhs";
      if (dr) EXPECT_TRUE(same_bits(floats(*dr), want.d_rhs)) << "d_rhs";
      uint32_t got_status = ~0u;
      std::memcpy(&got_status, status.get().data(), 4);
      EXPECT_EQ(got_status, want_status);
      for (const Guarded* g : {&l, &r, &d, &dl, &s, &status}) EXPECT_TRUE(g->guards_intact());
      for (const std::optional<Guarded>* g : {&dr, &work})
        if (*g) EXPECT_TRUE((*g)->guards_intact());
    }
}

// GmmBackwardPlan::sizes(): each operand's exact bytes (odd 16-bit counts included), for a sharded
// problem with three element types (d_out has out's type, d_lhs lhs's, d_rhs rhs's); and the same as the
// two plans it is made of.
TEST_F(DeviceTest, BackwardSizes) {
  for (bool transpose : {false, true}) {
    GmmProblem p;
    p.m = 11;
    p.k = 5;
    p.n = 3;
    p.group_sizes = {4, 0, 5, 1};
    p.group_offset = 1;
    p.num_rhs_groups = 2;
    p.transpose_rhs = transpose;
    p.lhs_type = DType::f32;
    p.rhs_type = DType::bf16;
    p.out_type = DType::f16;
    const GmmBackwardPlan plan(ctx(), p);
    const GmmBackwardSizes s = plan.sizes();
    // Exactly the elements' bytes, odd 16-bit counts included (33 f16 elements of d_out).
    EXPECT_EQ(s.lhs, 11u * 5 * 4);
    EXPECT_EQ(s.rhs, 2u * 5 * 3 * 2);
    EXPECT_EQ(s.d_out, 11u * 3 * 2);
    EXPECT_EQ(s.d_lhs, 11u * 5 * 4);
    EXPECT_EQ(s.d_rhs, s.rhs);
    const OperandSizes a = plan.d_lhs_plan().sizes(), b = plan.d_rhs_plan().sizes();
    EXPECT_EQ(s.lhs, b.lhs);
    EXPECT_EQ(s.rhs, a.rhs);
    EXPECT_EQ(s.d_out, a.lhs);
    EXPECT_EQ(s.d_out, b.rhs);
    EXPECT_EQ(s.d_lhs, a.out);
    EXPECT_EQ(s.d_rhs, b.out);
    EXPECT_EQ(plan.metadata_bytes(), plan.d_lhs_plan().metadata_bytes() + plan.d_rhs_plan().metadata_bytes());
    EXPECT_GT(plan.metadata_bytes(), 0u);
  }
}

}  // namespace
}  // namespace vkgmm::test
