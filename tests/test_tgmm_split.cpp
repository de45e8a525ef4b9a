// tgmm's split reduction for skewed groups (tgmm_items.hpp), planned on lavapipe as for a discrete GPU
// (tiling_device.hpp: a CPU device never splits) and run there: a long group's rows reduced in chunks by
// several workgroups, summed in a fixed order by the combine. Each case checks that the plan split, the
// result against the reference, and that a second run gives the same bits.
#include <string>

#include "context_impl.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

// Three long groups (two adjacent: one combine run, one apart: another) among short and empty ones.
const std::vector<int32_t> kSkewed = {1200, 1100, 5, 9, 0, 14, 3, 1000, 6, 11, 2, 7};

int64_t total_rows(const std::vector<int32_t>& sizes) {
  int64_t m = 0;
  for (int32_t s : sizes) m += s;
  return m;
}

struct Inputs {
  std::vector<float> lhs, rhs, ex;
};

Inputs inputs_for(const TgmmProblem& p, int64_t groups, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  in.lhs = random_values(size_t(p.k) * p.m, p.lhs_type, rng);
  in.rhs = random_values(size_t(p.m) * p.n, p.rhs_type, rng);
  if (p.existing_out) in.ex = random_values(size_t(groups) * p.k * p.n, p.out_type, rng);
  return in;
}

// Runs p twice with the plan's own workspace and once with one of the test's own at an offset; expects
// the plan to split, the reference's result and the same bits every time.
void expect_split_matches(Context& c, const TgmmProblem& p, uint32_t seed) {
  const int64_t G = int64_t(p.group_sizes.size());
  const int64_t groups = p.num_actual_groups < 0 ? G - p.group_offset : p.num_actual_groups;
  const TgmmPlan plan(c, p);
  ASSERT_GT(plan.workspace_bytes(), 0u) << "the plan did not split the long groups' reductions";
  const Inputs in = inputs_for(p, groups, seed);
  const std::vector<float> want = reference::tgmm(p, in.lhs, in.rhs, in.ex);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  const std::vector<float> first = run_tgmm(c, p, in.lhs, in.rhs, in.ex);
  EXPECT_TRUE(all_close(first, want, tol.atol * 4, tol.rtol));
  EXPECT_TRUE(same_bits(run_tgmm(c, p, in.lhs, in.rhs, in.ex), first)) << "a second run";

  // An app's workspace at an aligned offset, out poisoned first.
  const VkDeviceSize offset = std::max<VkDeviceSize>(c.info().min_storage_buffer_offset_alignment, 4) * 3;
  Buffer work = c.create_buffer(offset + plan.workspace_bytes());
  Buffer l = upload(c, p.lhs_type, in.lhs), r = upload(c, p.rhs_type, in.rhs);
  const size_t out_count = size_t(groups) * p.k * p.n;
  Buffer o = poisoned(c, out_count * dtype_size(p.out_type));
  Buffer e;
  if (p.existing_out) e = upload(c, p.out_type, in.ex);
  TgmmOperands ops{l.view(), r.view(), o.view(), p.existing_out ? e.view() : BufferView{}};
  ops.workspace = {work.handle(), offset, plan.workspace_bytes()};
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  EXPECT_TRUE(same_bits(download(o, p.out_type, out_count), first)) << "the app's workspace";
  // One too small is refused before anything is recorded.
  ops.workspace.size = plan.workspace_bytes() - 4;
  expect_invalid_argument([&] { plan.check(ops); }, "workspace: view of");
}

TgmmProblem skewed_problem(int64_t k, int64_t n) {
  TgmmProblem p;
  p.group_sizes = kSkewed;
  p.m = total_rows(kSkewed);
  p.k = k;
  p.n = n;
  return p;
}

TEST(TgmmSplit, BothSchedulesAndLayouts) {
  for (Schedule s : {Schedule::direct, Schedule::shared})
    for (bool lhs_mk : {false, true})
      for (bool out_nk : {false, true}) {
        SCOPED_TRACE(std::string(schedule_name(s)) + (lhs_mk ? " lhs [m, k]" : " lhs [k, m]") +
                     (out_nk ? " out [n, k]" : " out [k, n]"));
        Context c = gpu_planned_context();
        TgmmProblem p = skewed_problem(24, 20);
        p.schedule = s, p.lhs_mk = lhs_mk, p.out_nk = out_nk;
        expect_split_matches(c, p, 11);
      }
}

// existing_out (added by the kernel for whole groups, by the combine for split ones), in place too; a
// 16-bit out; odd k and n; a window of the groups; the persistent grid.
TEST(TgmmSplit, ExistingOutTypesWindowsAndGrids) {
  Context c = gpu_planned_context();
  {
    SCOPED_TRACE("existing_out, bf16 out, odd k and n");
    TgmmProblem p = skewed_problem(13, 7);
    p.existing_out = true;
    p.out_type = DType::bf16;
    expect_split_matches(c, p, 12);
  }
  {
    SCOPED_TRACE("a window: groups 1 .. 8");
    TgmmProblem p = skewed_problem(16, 12);
    p.group_offset = 1, p.num_actual_groups = 8;
    expect_split_matches(c, p, 13);
  }
  {
    SCOPED_TRACE("the persistent grid");
    TgmmProblem p = skewed_problem(20, 16);
    p.grid = Grid::persistent;
    expect_split_matches(c, p, 14);
  }
  {
    SCOPED_TRACE("in place: existing_out is out");
    TgmmProblem p = skewed_problem(8, 8);
    p.existing_out = true;
    const TgmmPlan plan(c, p);
    ASSERT_GT(plan.workspace_bytes(), 0u);
    const int64_t groups = int64_t(kSkewed.size());
    const Inputs in = inputs_for(p, groups, 15);
    Buffer l = upload(c, p.lhs_type, in.lhs), r = upload(c, p.rhs_type, in.rhs), o = upload(c, p.out_type, in.ex);
    c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), r.view(), o.view(), o.view()}); });
    EXPECT_TRUE(all_close(download(o, p.out_type, in.ex.size()), reference::tgmm(p, in.lhs, in.rhs, in.ex), 4e-3, 1e-5));
  }
}

// Groups of like sizes are not split: the plan needs no workspace.
TEST(TgmmSplit, EvenGroupsAreNotSplit) {
  Context c = gpu_planned_context();
  TgmmProblem p;
  p.group_sizes = {300, 280, 0, 310, 295};
  p.m = total_rows(p.group_sizes);
  p.k = p.n = 16;
  EXPECT_EQ(TgmmPlan(c, p).workspace_bytes(), 0u);
}

// The backward's d_rhs is the split tgmm: the plan's own workspace and an app's share of the backward's;
// with the sizes on the device too.
TEST(TgmmSplit, BackwardWeightGradient) {
  Context c = gpu_planned_context();
  GmmProblem f;
  f.group_sizes = kSkewed;
  f.m = total_rows(kSkewed);
  f.k = 20;
  f.n = 12;
  const GmmBackwardPlan plan(c, f);
  ASSERT_GT(plan.d_rhs_plan().workspace_bytes(), 0u);
  EXPECT_GE(plan.workspace_bytes(), plan.d_rhs_plan().workspace_bytes());
  std::mt19937 rng(16);
  const auto lhs = random_values(size_t(f.m) * f.k, f.lhs_type, rng);
  const auto rhs = random_values(kSkewed.size() * f.k * f.n, f.rhs_type, rng);
  const auto d_out = random_values(size_t(f.m) * f.n, f.out_type, rng);
  const reference::Gradients want = reference::gmm_backward(f, lhs, rhs, d_out);
  const reference::Gradients got = run_backward(c, f, lhs, rhs, d_out);
  EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, 1e-3, 1e-5));
  EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, 4e-3, 1e-5));

  // The app's workspace: d_rhs's share of it (d_lhs, with the sizes on the host, takes none).
  Buffer l = upload(c, f.lhs_type, lhs), r = upload(c, f.rhs_type, rhs), d = upload(c, f.out_type, d_out);
  Buffer dl = poisoned(c, got.d_lhs.size() * 4), dr = poisoned(c, got.d_rhs.size() * 4);
  Buffer work = c.create_buffer(plan.workspace_bytes());
  GmmBackwardOperands ops;
  ops.lhs = l.view(), ops.rhs = r.view(), ops.d_out = d.view(), ops.d_lhs = dl.view(), ops.d_rhs = dr.view();
  ops.workspace = work.view();
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  EXPECT_TRUE(same_bits(download(dl, DType::f32, got.d_lhs.size()), got.d_lhs)) << "d_lhs, the app's workspace";
  EXPECT_TRUE(same_bits(download(dr, DType::f32, got.d_rhs.size()), got.d_rhs)) << "d_rhs, the app's workspace";

  // The sizes on the device: d_rhs split there alike (tests/test_tgmm_device_split.cpp), the same bits.
  const reference::Gradients dev = run_backward_device(c, f, lhs, rhs, d_out);
  EXPECT_TRUE(same_bits(dev.d_rhs, got.d_rhs)) << "d_rhs, device group sizes";
  EXPECT_TRUE(same_bits(dev.d_lhs, got.d_lhs)) << "d_lhs, device group sizes";
}

}  // namespace
}  // namespace vkgmm::test
