// Problems past one storage-buffer binding (maxStorageBufferRange: 128 MiB on lavapipe), grids past
// 65535 workgroups, and many rows and groups, kept quick by making the other dimensions small.
#include <optional>

#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

// Cheap deterministic values in [-1, 1) (64M of them must not take seconds to make).
std::vector<float> pattern(size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = float(int32_t(x >> 8) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

// A context whose plans read storage buffers only (no texel views): inputs past one binding are bound in
// parts (the split layout).
Context& storage_ctx() {
  static Context c = [] {
    ContextOptions o;
    o.texel_loads = false;
    return DeviceTest::make_context(o);
  }();
  return c;
}

// Whether c reads inputs of 32-bit types (and with `sixteen` of 16-bit ones too) through texel views.
bool cpu_texel_device(const Context& c, bool sixteen = false) {
  return c.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU && c.info().texel_loads_32bit &&
         (!sixteen || c.info().texel_loads_16bit) && *c.options().texel_loads;
}

// gmm on `lhs`, `rhs` (encoded to the problem's types) in vkgmm buffers, or with `app_buffers` in an
// app's own VkBuffers of storage usage only (vkgmm knows nothing of them: no texel views), out in a vkgmm
// buffer; expects the plan to read the inputs through texel views exactly when `texel`.
std::vector<float> run_gmm_inputs_in(Context& c, const GmmProblem& p, const std::vector<float>& lhs,
                                     const std::vector<float>& rhs, bool app_buffers, bool texel) {
  std::optional<AppBuffer> app_l, app_r;
  Buffer own_l, own_r;
  GmmOperands ops;
  const std::vector<uint8_t> l = encode(p.lhs_type, lhs), r = encode(p.rhs_type, rhs);
  if (app_buffers) {
    app_l.emplace(c, l, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    app_r.emplace(c, r, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    ops.lhs = {app_l->buffer, 0, l.size()};
    ops.rhs = {app_r->buffer, 0, r.size()};
  } else {
    own_l = c.create_buffer(l.size());
    own_r = c.create_buffer(r.size());
    own_l.upload(l.data(), l.size());
    own_r.upload(r.data(), r.size());
    ops.lhs = own_l.view();
    ops.rhs = own_r.view();
  }
  const size_t out_count = size_t(p.m) * p.n, out_bytes = out_count * dtype_size(p.out_type);
  Buffer out = c.create_buffer(out_bytes);
  ops.out = out.view();
  GmmPlan plan(c, p);
  EXPECT_EQ(plan.texel_loads(ops), texel);
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  std::vector<uint8_t> got(out_bytes);
  out.download(got.data(), out_bytes);
  return decode(p.out_type, got.data(), out_count);
}

// gmm with rhs [8, 4096, 2048] f32: 256 MiB, past one binding, each way vkgmm reads it: vkgmm's own
// buffers through their texel views (CPU devices: one plain binding), an app's VkBuffers under the same
// plan (the split build, in parts), and a context without texel loads (a split plan).
TEST_F(DeviceTest, GmmRhsLargerThanOneBinding) {
  GmmProblem p;
  p.m = 12;
  p.k = 4096;
  p.n = 2048;
  p.group_sizes = {1, 0, 3, 1, 2, 1, 1, 2};  // the last row belongs to no group
  const size_t rhs_count = size_t(8) * p.k * p.n;
  ASSERT_GT(rhs_count * 4, ctx().info().max_storage_buffer_range) << "the case must exceed one binding here";
  auto lhs = pattern(size_t(p.m) * p.k, 1), rhs = pattern(rhs_count, 2);
  const auto want = reference::gmm(p, lhs, rhs);
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, false, cpu_texel_device(ctx())), want, 2e-3, 1e-5))
      << "vkgmm's buffers";
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, true, false), want, 2e-3, 1e-5)) << "an app's buffers";
  EXPECT_TRUE(all_close(run_gmm(storage_ctx(), p, lhs, rhs), want, 2e-3, 1e-5)) << "texel loads off";
}

// rhs [3, 4096, 11264] f32 (553 MB): past the split layout's 4 parts of 128 MiB, so read only through a
// texel view (CPU devices, up to the view's 2 GiB); an app's VkBuffer, and a context without texel loads,
// are refused with the reason (unsupported) before any GPU work.
TEST_F(DeviceTest, GmmRhsPastFourBindingsThroughTexelViews) {
  if (!cpu_texel_device(ctx())) GTEST_SKIP() << "inputs are read through texel views on CPU devices only";
  GmmProblem p;
  p.m = 5;
  p.k = 4096;
  p.n = 11264;
  p.group_sizes = {2, 0, 3};
  const size_t rhs_count = size_t(3) * p.k * p.n;
  ASSERT_GT(rhs_count * 4, 4 * ctx().info().max_storage_buffer_range);
  EXPECT_GE(ctx().max_whole_input_bytes(DType::f32), rhs_count * 4);
  // Without texel views: one binding, less the slack of a view that starts past its aligned offset.
  const DeviceInfo& si = storage_ctx().info();
  EXPECT_EQ(storage_ctx().max_whole_input_bytes(DType::f32),
            si.max_storage_buffer_range - std::max<uint64_t>(si.min_storage_buffer_offset_alignment, 16));
  auto lhs = pattern(size_t(p.m) * p.k, 12), rhs = pattern(rhs_count, 13);
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, false, true), reference::gmm(p, lhs, rhs), 2e-3, 1e-5));

  // The same plan given an app's VkBuffer (no views) for rhs: refused at check / record, naming rhs.
  GmmPlan plan(ctx(), p);
  Buffer a = ctx().create_buffer(lhs.size() * 4), out = ctx().create_buffer(size_t(p.m) * p.n * 4);
  AppBuffer r(ctx(), std::vector<uint8_t>(rhs_count * 4), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  expect_refused([&] { plan.check({a.view(), {r.buffer, 0, rhs_count * 4}, out.view(), {}}); }, Status::unsupported,
                "rhs: " + std::to_string(rhs_count * 4) + " bytes are more than vkgmm binds as a storage buffer");
  expect_refused([&] { GmmPlan(storage_ctx(), p); }, Status::unsupported, "rhs is 553648128 bytes, more than vkgmm can bind");
}
// The same weights routed by expert ids, per slot and combined: lhs gathered, rhs read through its texel
// view (CPU devices) or in parts (texel loads off).
TEST_F(DeviceTest, RoutedGmmRhsLargerThanOneBinding) {
  for (Context* c : {&ctx(), &storage_ctx()})
  for (bool combine : {false, true}) {
    GmmProblem p;
    p.m = 3;
    p.k = 4096;
    p.n = 2048;
    p.num_rhs_groups = 8;
    p.routing = {2, false, combine, 8};
    const std::vector<int32_t> ids = {7, 0, 3, -1, 5, 7};
    const std::vector<float> weights = {0.25f, 0.75f, 1.0f, 0.0f, 0.5f, 0.5f};
    auto lhs = pattern(size_t(p.m) * p.k, 3), rhs = pattern(size_t(8) * p.k * p.n, 4);
    const std::vector<float> w = combine ? weights : std::vector<float>{};
    EXPECT_TRUE(all_close(run_gmm_routed(*c, p, lhs, rhs, ids, w), reference::gmm_routed(p, lhs, rhs, ids, w),
                          2e-3, 1e-5))
        << (combine ? "combined" : "per slot") << (c == &ctx() ? "" : ", texel loads off");
  }
}

// tgmm producing out [8, 4096, 2048] f32 (256 MiB) with existing_out of the same size.
TEST_F(DeviceTest, TgmmOutLargerThanOneBinding) {
  TgmmProblem p;
  p.m = 12;
  p.k = 4096;
  p.n = 2048;
  p.group_sizes = {1, 2, 0, 1, 2, 1, 2, 3};
  p.existing_out = true;
  const size_t out_count = size_t(8) * p.k * p.n;
  ASSERT_GT(out_count * 4, ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.k) * p.m, 3), rhs = pattern(size_t(p.m) * p.n, 4), ex = pattern(out_count, 5);
  EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs, ex), reference::tgmm(p, lhs, rhs, ex), 1e-3, 1e-5));
}

// m = 200000 rows in G = 512 groups; a 2-row tiling makes ~100k visits, a grid folded past 65535.
TEST_F(DeviceTest, GmmManyRowsManyGroups) {
  std::mt19937 rng(6);
  GmmProblem p;
  p.m = 200000;
  p.k = 8;
  p.n = 8;
  p.group_sizes = make_group_sizes(Sizes::random, 512, p.m, rng);
  auto lhs = pattern(size_t(p.m) * p.k, 6), rhs = pattern(size_t(512) * p.k * p.n, 7);
  auto want = reference::gmm(p, lhs, rhs);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), want, 1e-3, 1e-5)) << "automatic tiling";
  p.tiling = TilingChoice::of(Tiling{2, 8, 8});
  GmmPlan plan(ctx(), p);
  EXPECT_GT(plan.num_tiles(), 65535);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), want, 1e-3, 1e-5)) << "2-row tiles";
}

TEST_F(DeviceTest, TgmmManyRowsManyGroups) {
  std::mt19937 rng(8);
  TgmmProblem p;
  p.m = 200000;
  p.k = 8;
  p.n = 8;
  p.group_sizes = make_group_sizes(Sizes::random, 512, p.m, rng);
  auto lhs = pattern(size_t(p.k) * p.m, 8), rhs = pattern(size_t(p.m) * p.n, 9);
  EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs), reference::tgmm(p, lhs, rhs), 1e-3, 1e-5));
}

// lhs [8448, 4096] f32 (138 MB) past one binding in tgmm (lhs [k, m]): through its texel view, and in
// parts with texel loads off.
TEST_F(DeviceTest, TgmmLhsLargerThanOneBinding) {
  TgmmProblem p;
  p.m = 4096;
  p.k = 8448;
  p.n = 4;
  p.group_sizes = {1000, 0, 3000, 96};
  ASSERT_GT(size_t(p.k) * p.m * 4, ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.k) * p.m, 14), rhs = pattern(size_t(p.m) * p.n, 15);
  const auto want = reference::tgmm(p, lhs, rhs);
  {
    Buffer l = ctx().create_buffer(lhs.size() * 4), r = ctx().create_buffer(rhs.size() * 4),
           o = ctx().create_buffer(size_t(4) * p.k * p.n * 4);
    EXPECT_EQ(TgmmPlan(ctx(), p).texel_loads({l.view(), r.view(), o.view(), {}}), cpu_texel_device(ctx()));
  }
  EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs), want, 2e-3, 1e-5));
  EXPECT_TRUE(all_close(run_tgmm(storage_ctx(), p, lhs, rhs), want, 2e-3, 1e-5)) << "texel loads off";
}

// The split layout with 16-bit types and odd element offsets in the words (packed access in parts), and
// the same rhs through its 16-bit texel view.
TEST_F(DeviceTest, GmmLargeBf16Rhs) {
  GmmProblem p;
  p.m = 3;
  p.k = 8191;  // odd: rows of 16-bit elements straddle words
  p.n = 8193;
  p.group_sizes = {1, 2};
  p.rhs_type = DType::bf16;
  p.out_type = DType::bf16;
  ASSERT_GT(size_t(2) * p.k * p.n * 2, ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.m) * p.k, 10), rhs = pattern(size_t(2) * p.k * p.n, 11);
  for (auto& x : rhs) x = round_to(DType::bf16, x);
  const auto want = reference::gmm(p, lhs, rhs);
  // vkgmm pads its buffers to whole texels: this rhs, ending mid-texel, keeps its view.
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, false, cpu_texel_device(ctx(), true)), want, 1e-3, 1e-2));
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, true, false), want, 1e-3, 1e-2)) << "an app's buffers";
  EXPECT_TRUE(all_close(run_gmm(storage_ctx(), p, lhs, rhs), want, 1e-3, 1e-2)) << "texel loads off";
}

}  // namespace
}  // namespace vkgmm::test
