// ContextOptions::app_workspaces: plans made on such a context allocate no workspace of their own, refuse a
// record or check without one (before recording anything), and with the app's give the same bits as a
// default context's plans with theirs. The split tgmm and its backward plan as a discrete GPU
// (tiling_device.hpp), where they take a workspace with the group sizes on the host.
#include <functional>
#include <random>
#include <string>
#include <utility>

#include "context_impl.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

Context gpu_planned(bool app_workspaces) {
  ContextOptions o;
  o.app_workspaces = app_workspaces;
  return gpu_planned_context(o);
}

// Long groups among short and empty ones: the plans split the long groups' reductions.
const std::vector<int32_t> kSkewed = {900, 4, 0, 13, 800, 6, 2};

int64_t total_rows() {
  int64_t m = 0;
  for (int32_t s : kSkewed) m += s;
  return m;
}

constexpr const char* kRefusal = "workspace: the plan has none of its own (ContextOptions::app_workspaces)";

// Expects `record` to be refused inside a command buffer that is then submitted anyway: whatever it recorded
// before refusing would run, and the caller checks that the outputs kept their poison.
void expect_refused_record(Context& c, const std::function<void(VkCommandBuffer)>& record, const std::string& needle) {
  c.submit_and_wait([&](VkCommandBuffer cb) { expect_invalid_argument([&] { record(cb); }, needle); });
}

TEST(AppWorkspaces, OptionIsReported) {
  ContextOptions o;
  o.app_workspaces = true;
  EXPECT_TRUE(DeviceTest::make_context(o).options().app_workspaces);
  EXPECT_FALSE(DeviceTest::make_context({}).options().app_workspaces);
}

TEST(AppWorkspaces, TgmmTakesTheAppsWorkspaceOnly) {
  Context own = gpu_planned(false), app = gpu_planned(true);
  TgmmProblem p;
  p.group_sizes = kSkewed;
  p.m = total_rows();
  p.k = 12;
  p.n = 20;
  const TgmmPlan mine(own, p), theirs(app, p);
  ASSERT_GT(theirs.workspace_bytes(), 0u) << "the plan did not split";
  EXPECT_EQ(theirs.workspace_bytes(), mine.workspace_bytes());
  // The default plan holds its workspace beside its metadata; the app's plan holds the metadata alone.
  EXPECT_GE(mine.metadata_bytes(), theirs.metadata_bytes() + theirs.workspace_bytes());

  std::mt19937 rng(5);
  const auto lhs = random_values(size_t(p.k) * p.m, p.lhs_type, rng);
  const auto rhs = random_values(size_t(p.m) * p.n, p.rhs_type, rng);
  const std::vector<float> want = run_tgmm(own, p, lhs, rhs);
  EXPECT_TRUE(all_close(want, reference::tgmm(p, lhs, rhs, {}), 4e-3, 1e-5));

  const size_t out_count = kSkewed.size() * size_t(p.k * p.n);
  Buffer l = upload(app, p.lhs_type, lhs), r = upload(app, p.rhs_type, rhs), o = poisoned(app, out_count * 4);
  TgmmOperands ops{l.view(), r.view(), o.view(), {}};
  expect_invalid_argument([&] { theirs.check(ops); }, std::string("tgmm: ") + kRefusal);
  expect_refused_record(app, [&](VkCommandBuffer cb) { theirs.record(cb, ops); }, std::string("tgmm: ") + kRefusal);
  EXPECT_TRUE(still_poisoned(o, out_count * 4));
  Buffer work = app.create_buffer(theirs.workspace_bytes());
  ops.workspace = work.view();
  app.submit_and_wait([&](VkCommandBuffer cb) { theirs.record(cb, ops); });
  EXPECT_TRUE(same_bits(download(o, DType::f32, out_count), want));
}

TEST(AppWorkspaces, BackwardTakesTheAppsWorkspaceOnly) {
  Context own = gpu_planned(false), app = gpu_planned(true);
  GmmProblem f;
  f.group_sizes = kSkewed;
  f.m = total_rows();
  f.k = 16;
  f.n = 12;
  const GmmBackwardPlan mine(own, f), theirs(app, f);
  ASSERT_GT(theirs.workspace_bytes(), 0u) << "d_rhs did not split";
  EXPECT_LT(theirs.metadata_bytes(), mine.metadata_bytes());
  std::mt19937 rng(8);
  const auto lhs = random_values(size_t(f.m) * f.k, f.lhs_type, rng);
  const auto rhs = random_values(kSkewed.size() * f.k * f.n, f.rhs_type, rng);
  const auto d_out = random_values(size_t(f.m) * f.n, f.out_type, rng);
  const reference::Gradients want = run_backward(own, f, lhs, rhs, d_out);
  const reference::Gradients ref = reference::gmm_backward(f, lhs, rhs, d_out);
  EXPECT_TRUE(all_close(want.d_lhs, ref.d_lhs, 1e-3, 1e-5)) << "d_lhs";
  EXPECT_TRUE(all_close(want.d_rhs, ref.d_rhs, 1e-3, 1e-5)) << "d_rhs";

  Buffer l = upload(app, f.lhs_type, lhs), r = upload(app, f.rhs_type, rhs), d = upload(app, f.out_type, d_out);
  Buffer dl = poisoned(app, want.d_lhs.size() * 4), dr = poisoned(app, want.d_rhs.size() * 4);
  GmmBackwardOperands ops;
  ops.lhs = l.view(), ops.rhs = r.view(), ops.d_out = d.view(), ops.d_lhs = dl.view(), ops.d_rhs = dr.view();
  expect_invalid_argument([&] { theirs.check(ops); }, std::string("gmm_backward: ") + kRefusal);
  expect_refused_record(app, [&](VkCommandBuffer cb) { theirs.record(cb, ops); }, std::string("gmm_backward: ") + kRefusal);
  EXPECT_TRUE(still_poisoned(dl, want.d_lhs.size() * 4));
  EXPECT_TRUE(still_poisoned(dr, want.d_rhs.size() * 4));
  // Its d_rhs plan recorded on its own refuses too.
  TgmmOperands t{l.view(), d.view(), dr.view(), {}};
  expect_invalid_argument([&] { theirs.d_rhs_plan().check(t); }, std::string("tgmm: ") + kRefusal);
  Buffer work = app.create_buffer(theirs.workspace_bytes());
  ops.workspace = work.view();
  app.submit_and_wait([&](VkCommandBuffer cb) { theirs.record(cb, ops); });
  EXPECT_TRUE(same_bits(download(dl, DType::f32, want.d_lhs.size()), want.d_lhs)) << "d_lhs";
  EXPECT_TRUE(same_bits(download(dr, DType::f32, want.d_rhs.size()), want.d_rhs)) << "d_rhs";
}

// Routed: gmm's routing build and the routed backward's passes work in the app's workspace.
TEST(AppWorkspaces, RoutedGmmAndBackwardTakeTheAppsWorkspaceOnly) {
  ContextOptions o;
  o.app_workspaces = true;
  Context own = DeviceTest::make_context({}), app = DeviceTest::make_context(o);
  GmmProblem f;
  f.m = 9;  // tokens
  f.k = 8;
  f.n = 12;
  f.routing.top_k = 2;
  f.routing.combine = true;
  f.num_rhs_groups = 4;  // E = 4 experts (the group sizes come from the ids)
  std::mt19937 rng(3);
  const auto x = random_values(size_t(f.m) * f.k, f.lhs_type, rng);
  const auto w = random_values(size_t(4) * f.k * f.n, f.rhs_type, rng);
  std::vector<int32_t> ids;
  std::vector<float> weights;
  for (int64_t t = 0; t < f.m; ++t) {
    ids.push_back(int32_t(t % 4));
    ids.push_back(int32_t((t + 1 + t / 4) % 4));
    weights.push_back(0.25f + 0.05f * float(t));
    weights.push_back(0.5f);
  }
  const std::vector<float> want = run_gmm_routed(own, f, x, w, ids, weights);
  EXPECT_TRUE(all_close(want, reference::gmm_routed(f, x, w, ids, weights), 1e-3, 1e-5));

  const GmmPlan plan(app, f);
  ASSERT_GT(plan.workspace_bytes(), 0u);
  EXPECT_LT(plan.metadata_bytes(), GmmPlan(own, f).metadata_bytes());
  Buffer xb = upload(app, f.lhs_type, x), wb = upload(app, f.rhs_type, w);
  Buffer ib = app.create_buffer(ids.size() * 4), gb = upload(app, DType::f32, weights);
  ib.upload(ids.data(), ids.size() * 4);
  Buffer y = poisoned(app, want.size() * 4);
  GmmOperands ops{xb.view(), wb.view(), y.view()};
  ops.ids = ib.view(), ops.weights = gb.view();
  expect_invalid_argument([&] { plan.check(ops); }, std::string("gmm: ") + kRefusal);
  expect_refused_record(app, [&](VkCommandBuffer cb) { plan.record(cb, ops); }, std::string("gmm: ") + kRefusal);
  EXPECT_TRUE(still_poisoned(y, want.size() * 4));
  Buffer work = app.create_buffer(plan.workspace_bytes());
  ops.workspace = work.view();
  app.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  EXPECT_TRUE(same_bits(download(y, DType::f32, want.size()), want));

  // The backward of the routed forward: refused without the app's workspace, and with it the bits of the
  // default context's backward with its own.
  const GmmBackwardPlan bw_own(own, f), bw_app(app, f);
  EXPECT_EQ(bw_app.workspace_bytes(), bw_own.workspace_bytes());
  // Neither the routed backward nor its two plans hold a workspace (routed: no host metadata either).
  EXPECT_GT(bw_own.metadata_bytes(), 0u);
  EXPECT_EQ(bw_app.metadata_bytes(), 0u);
  const auto d_y = random_values(size_t(f.m) * f.n, f.out_type, rng);
  const GmmBackwardSizes s = bw_app.sizes();
  auto run = [&](Context& c, const GmmBackwardPlan& bw, bool give_workspace) {
    Buffer xl = upload(c, f.lhs_type, x), wr = upload(c, f.rhs_type, w), dy = upload(c, f.out_type, d_y);
    Buffer i = c.create_buffer(ids.size() * 4), g = upload(c, DType::f32, weights);
    i.upload(ids.data(), ids.size() * 4);
    Buffer dx = poisoned(c, s.d_lhs), dw = poisoned(c, s.d_rhs), dg = poisoned(c, s.d_weights);
    Buffer ws = c.create_buffer(bw.workspace_bytes());
    GmmBackwardOperands b;
    b.lhs = xl.view(), b.rhs = wr.view(), b.d_out = dy.view(), b.d_lhs = dx.view(), b.d_rhs = dw.view();
    b.ids = i.view(), b.weights = g.view(), b.d_weights = dg.view();
    if (!give_workspace) {
      expect_invalid_argument([&] { bw.check(b); }, std::string("gmm_backward: ") + kRefusal);
      expect_refused_record(c, [&](VkCommandBuffer cb) { bw.record(cb, b); }, std::string("gmm_backward: ") + kRefusal);
      EXPECT_TRUE(still_poisoned(dx, s.d_lhs));
      EXPECT_TRUE(still_poisoned(dw, s.d_rhs));
      return std::vector<float>{};
    }
    b.workspace = ws.view();
    c.submit_and_wait([&](VkCommandBuffer cb) { bw.record(cb, b); });
    std::vector<float> all = download(dx, DType::f32, s.d_lhs / 4);
    for (const auto& [out, bytes] : {std::pair{&dw, s.d_rhs}, std::pair{&dg, s.d_weights}}) {
      const std::vector<float> v = download(*out, DType::f32, bytes / 4);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  run(app, bw_app, false);
  GmmProblem saving = f;
  saving.epilogue.save_pre_activation = true;
  expect_invalid_argument([&] { GmmPlan(app, saving).saved_pre_activation(); }, std::string("gmm: ") + kRefusal);
  const GmmPlan saver(app, saving);
  Buffer saver_work = app.create_buffer(saver.workspace_bytes());  // its own size: a smaller view is refused
  EXPECT_EQ(saver.saved_pre_activation(saver_work.view()).buffer, saver_work.handle());
  const std::vector<float> got = run(app, bw_app, true), mine = run(own, bw_own, true);
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(same_bits(got, mine));
  reference::RoutedInputs in;
  in.lhs = x, in.rhs = w, in.ids = ids, in.weights = weights;
  const reference::RoutedGradients ref = reference::gmm_routed_backward(f, in, d_y);
  std::vector<float> expected;
  for (const std::vector<double>* part : {&ref.d_lhs, &ref.d_rhs, &ref.d_weights})
    expected.insert(expected.end(), part->begin(), part->end());
  EXPECT_TRUE(all_close(mine, expected, 1e-3, 1e-5)) << "d_lhs, d_rhs and d_weights against the reference";
}

}  // namespace
}  // namespace vkgmm::test
