// Problems past one storage-buffer binding (on contexts whose binding limit the tests lower, so that every
// device takes those paths on small shapes; and past the device's own limit where that is small), grids
// past 65535 workgroups, and many rows and groups, kept quick by making the other dimensions small.
#include <optional>

#include "context_impl.hpp"
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

// The binding limit of the contexts below: 1 MiB, so that a few MiB of operands take the paths past one
// binding on every device (on lavapipe, maxStorageBufferRange is 128 MiB; on an H100, 4 GiB).
constexpr uint64_t kBinding = uint64_t(1) << 20;

// A context binding at most kBinding, reading vkgmm's own buffers through texel views where the device
// does (CPU devices): inputs past one binding are then read whole through their views.
Context& limited_ctx() {
  static Context c = binding_limited_context(kBinding);
  return c;
}

// The same limit, storage buffers only (no texel views): inputs past one binding are bound in parts (the
// split layout).
Context& limited_storage_ctx() {
  static Context c = [] {
    ContextOptions o;
    o.texel_loads = false;
    return binding_limited_context(kBinding, o);
  }();
  return c;
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

// gmm with rhs [8, 256, 384] f32 (3 MiB, three bindings of the limited contexts), each way vkgmm reads
// it: vkgmm's own buffers (through their texel views on CPU devices, one plain binding; else in parts), an
// app's VkBuffers under the same plan (the split build, in parts), and a context without texel loads.
TEST_F(DeviceTest, GmmRhsLargerThanOneBinding) {
  GmmProblem p;
  p.m = 12;
  p.k = 256;
  p.n = 384;
  p.group_sizes = {1, 0, 3, 1, 2, 1, 1, 2};  // the last row belongs to no group
  const size_t rhs_count = size_t(8) * p.k * p.n;
  ASSERT_GT(rhs_count * 4, 2 * limited_ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.m) * p.k, 1), rhs = pattern(rhs_count, 2);
  const auto want = reference::gmm(p, lhs, rhs);
  Context& c = limited_ctx();
  EXPECT_TRUE(all_close(run_gmm_inputs_in(c, p, lhs, rhs, false, reads_texel_views(c)), want, 1e-3, 1e-5))
      << "vkgmm's buffers";
  EXPECT_TRUE(all_close(run_gmm_inputs_in(c, p, lhs, rhs, true, false), want, 1e-3, 1e-5)) << "an app's buffers";
  EXPECT_TRUE(all_close(run_gmm(limited_storage_ctx(), p, lhs, rhs), want, 1e-3, 1e-5)) << "texel loads off";
}

// The same past the device's own maxStorageBufferRange, where a test can reach it in seconds (lavapipe's
// 128 MiB: rhs [8, 4096, 2048] f32, 256 MiB): the real limit, not one lowered by the test. A GPU's range
// (gigabytes) is left to the limited contexts above, which take the same paths.
TEST_F(DeviceTest, GmmRhsLargerThanTheDevicesBinding) {
  const uint64_t range = ctx().info().max_storage_buffer_range;
  if (range > (uint64_t(256) << 20))
    GTEST_SKIP() << "maxStorageBufferRange is " << range << " bytes: too large to pass here in seconds";
  GmmProblem p;
  p.m = 12;
  p.k = 4096;
  p.n = int64_t(2 * range / (8 * 4096 * 4));  // rhs over two bindings (each less its alignment slack)
  p.group_sizes = {1, 0, 3, 1, 2, 1, 1, 2};
  const size_t rhs_count = size_t(8) * p.k * p.n;
  ASSERT_GT(rhs_count * 4, range);
  auto lhs = pattern(size_t(p.m) * p.k, 1), rhs = pattern(rhs_count, 2);
  const auto want = reference::gmm(p, lhs, rhs);
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, false, reads_texel_views(ctx())), want, 2e-3, 1e-5))
      << "vkgmm's buffers";
  EXPECT_TRUE(all_close(run_gmm_inputs_in(ctx(), p, lhs, rhs, true, false), want, 2e-3, 1e-5)) << "an app's buffers";
}

// rhs [3, 256, 1792] f32 (5.25 MiB): past the split layout's 4 parts of the limited contexts' binding, so
// read only through a texel view (CPU devices, up to the view's reach); an app's VkBuffer, and a context
// without texel loads, are refused with the reason (unsupported) before any GPU work.
TEST_F(DeviceTest, GmmRhsPastFourBindingsThroughTexelViews) {
  Context& c = limited_ctx();
  if (!reads_texel_views(c)) GTEST_SKIP() << "inputs are read through texel views on CPU devices only";
  GmmProblem p;
  p.m = 5;
  p.k = 256;
  p.n = 1792;
  p.group_sizes = {2, 0, 3};
  const size_t rhs_count = size_t(3) * p.k * p.n;
  ASSERT_GT(rhs_count * 4, 4 * c.info().max_storage_buffer_range);
  EXPECT_GE(c.max_whole_input_bytes(DType::f32), rhs_count * 4);
  // Without texel views: one binding, less the slack of a view that starts past its aligned offset.
  const DeviceInfo& si = limited_storage_ctx().info();
  EXPECT_EQ(limited_storage_ctx().max_whole_input_bytes(DType::f32),
            si.max_storage_buffer_range - std::max<uint64_t>(si.min_storage_buffer_offset_alignment, 16));
  auto lhs = pattern(size_t(p.m) * p.k, 12), rhs = pattern(rhs_count, 13);
  EXPECT_TRUE(all_close(run_gmm_inputs_in(c, p, lhs, rhs, false, true), reference::gmm(p, lhs, rhs), 1e-3, 1e-5));

  // The same plan given an app's VkBuffer (no views) for rhs: refused at check / record, naming rhs.
  GmmPlan plan(c, p);
  Buffer a = c.create_buffer(lhs.size() * 4), out = c.create_buffer(size_t(p.m) * p.n * 4);
  AppBuffer r(c, std::vector<uint8_t>(rhs_count * 4), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  expect_refused([&] { plan.check({a.view(), {r.buffer, 0, rhs_count * 4}, out.view(), {}}); }, Status::unsupported,
                "rhs: " + std::to_string(rhs_count * 4) + " bytes are more than vkgmm binds as a storage buffer");
  expect_refused([&] { GmmPlan(limited_storage_ctx(), p); }, Status::unsupported,
                 "rhs is " + std::to_string(rhs_count * 4) + " bytes, more than vkgmm can bind");
}

// The same weights routed by expert ids, per slot and combined: lhs gathered, rhs read through its texel
// view (CPU devices) or in parts (texel loads off, and GPUs).
TEST_F(DeviceTest, RoutedGmmRhsLargerThanOneBinding) {
  for (Context* c : {&limited_ctx(), &limited_storage_ctx()})
  for (bool combine : {false, true}) {
    GmmProblem p;
    p.m = 3;
    p.k = 256;
    p.n = 384;
    p.num_rhs_groups = 8;
    p.routing = {2, false, combine, 8};
    const std::vector<int32_t> ids = {7, 0, 3, -1, 5, 7};
    const std::vector<float> weights = {0.25f, 0.75f, 1.0f, 0.0f, 0.5f, 0.5f};
    auto lhs = pattern(size_t(p.m) * p.k, 3), rhs = pattern(size_t(8) * p.k * p.n, 4);
    ASSERT_GT(rhs.size() * 4, 2 * c->info().max_storage_buffer_range);
    const std::vector<float> w = combine ? weights : std::vector<float>{};
    EXPECT_TRUE(all_close(run_gmm_routed(*c, p, lhs, rhs, ids, w), reference::gmm_routed(p, lhs, rhs, ids, w),
                          1e-3, 1e-5))
        << (combine ? "combined" : "per slot") << (c == &limited_ctx() ? "" : ", texel loads off");
  }
}

// A binding limit that is no power of two, as an H100's (4 GiB - 1): the split layout's parts are 1 MiB
// (the largest power of two within it), and the workspace may take the whole 1.5 MiB. A combined routed
// gmm in parts writes its per-slot results into the workspace past the first part (768 slots x 384
// columns, 1.125 MiB): the kernel sends those words to the second part, which must be the workspace's next
// MiB, not its first again.
TEST_F(DeviceTest, RoutedCombineResultsPastTheFirstPartOfTheWorkspace) {
  ContextOptions o;
  o.texel_loads = false;  // as on a GPU: the split layout
  Context c = binding_limited_context(3 * kBinding / 2, o);
  GmmProblem p;
  p.m = 96;
  p.k = 256;
  p.n = 384;
  p.num_rhs_groups = 8;
  p.routing = {8, false, true, 8};
  p.schedule = Schedule::shared;  // a GPU's: the combine a pass of its own (the direct one may fuse it)
  std::vector<int32_t> ids;
  std::vector<float> weights;
  for (int64_t t = 0; t < p.m; ++t)
    for (int32_t j = 0; j < 8; ++j) {
      ids.push_back(int32_t((t * 3 + j * 5) % 8));
      weights.push_back(0.125f * float(j + 1));
    }
  auto lhs = pattern(size_t(p.m) * p.k, 5), rhs = pattern(size_t(8) * p.k * p.n, 6);
  const GmmPlan plan(c, p);
  ASSERT_GT(rhs.size() * 4, c.info().max_storage_buffer_range) << "rhs fits one binding: no parts";
  ASSERT_GT(plan.workspace_bytes(), kBinding) << "the per-slot results fit the first part";
  EXPECT_TRUE(all_close(run_gmm_routed(c, p, lhs, rhs, ids, weights),
                        reference::gmm_routed(p, lhs, rhs, ids, weights), 1e-3, 1e-5));
  for (const std::string& m : c.take_validation_messages()) ADD_FAILURE() << "validation message: " << m;
}

// Block-format weights are addressed by 32-bit byte offsets: q8_0 (34 bytes per 32 values) past them is
// refused when the plan is made, though its values are fewer than 2^32 and the split layout would bind
// its bytes (a binding limit of 4 GiB - 1, as an H100's: parts of 2 GiB); q4_0 of the same shape, within
// them, is planned. No buffer is made.
TEST(BlockWeights, PastThirtyTwoBitByteOffsetsAreRefused) {
  ContextOptions o;
  o.texel_loads = false;
  Context c = DeviceTest::make_context(o);
  ContextInternals::of(c).dev.info.max_storage_buffer_range = 0xffffffffu;
  GmmProblem p;
  p.m = 8;
  p.k = 7168;
  p.n = 4864;
  p.group_sizes.assign(120, 0);
  p.group_sizes[0] = 8;
  p.num_rhs_groups = 120;  // 4,183,818,240 values, 4,445,306,880 bytes of q8_0
  p.transpose_rhs = true;
  p.rhs_type = DType::q8_0;
  expect_refused([&] { GmmPlan plan(c, p); }, Status::unsupported,
                 "gmm: rhs: 4445306880 bytes of q8_0 blocks: vkgmm addresses block-format weights by 32-bit byte offsets");
  p.rhs_type = DType::q4_0;
  EXPECT_NO_THROW(GmmPlan(c, p));
}

// tgmm producing out [8, 256, 320] f32 (2.5 MiB, three bindings) with existing_out of the same size.
TEST_F(DeviceTest, TgmmOutLargerThanOneBinding) {
  TgmmProblem p;
  p.m = 12;
  p.k = 256;
  p.n = 320;
  p.group_sizes = {1, 2, 0, 1, 2, 1, 2, 3};
  p.existing_out = true;
  const size_t out_count = size_t(8) * p.k * p.n;
  ASSERT_GT(out_count * 4, 2 * limited_ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.k) * p.m, 3), rhs = pattern(size_t(p.m) * p.n, 4), ex = pattern(out_count, 5);
  EXPECT_TRUE(all_close(run_tgmm(limited_ctx(), p, lhs, rhs, ex), reference::tgmm(p, lhs, rhs, ex), 1e-3, 1e-5));
}

// m = 200000 rows in G = 512 groups; 2-row tiles (the direct schedule's: the shared one keeps 16 rows at
// least) make ~100k visits, a grid folded past 65535.
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
  p.schedule = Schedule::direct;
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

// lhs [96, 4096] f32 (1.5 MiB) past one binding in tgmm (lhs [k, m]): through its texel view where the
// device reads them, and in parts with texel loads off.
TEST_F(DeviceTest, TgmmLhsLargerThanOneBinding) {
  TgmmProblem p;
  p.m = 4096;
  p.k = 96;
  p.n = 4;
  p.group_sizes = {1000, 0, 3000, 96};
  ASSERT_GT(size_t(p.k) * p.m * 4, limited_ctx().info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.k) * p.m, 14), rhs = pattern(size_t(p.m) * p.n, 15);
  const auto want = reference::tgmm(p, lhs, rhs);
  Context& c = limited_ctx();
  {
    Buffer l = c.create_buffer(lhs.size() * 4), r = c.create_buffer(rhs.size() * 4),
           o = c.create_buffer(size_t(4) * p.k * p.n * 4);
    EXPECT_EQ(TgmmPlan(c, p).texel_loads({l.view(), r.view(), o.view(), {}}), reads_texel_views(c));
  }
  EXPECT_TRUE(all_close(run_tgmm(c, p, lhs, rhs), want, 2e-3, 1e-5));
  EXPECT_TRUE(all_close(run_tgmm(limited_storage_ctx(), p, lhs, rhs), want, 2e-3, 1e-5)) << "texel loads off";
}

// The split layout with 16-bit types and odd element offsets in the words (packed access in parts), and
// the same rhs through its 16-bit texel view: rhs [2, 511, 1025] bf16 (2 MiB, two bindings).
TEST_F(DeviceTest, GmmLargeBf16Rhs) {
  GmmProblem p;
  p.m = 3;
  p.k = 511;  // odd: rows of 16-bit elements straddle words
  p.n = 1025;
  p.group_sizes = {1, 2};
  p.rhs_type = DType::bf16;
  p.out_type = DType::bf16;
  Context& c = limited_ctx();
  ASSERT_GT(size_t(2) * p.k * p.n * 2, c.info().max_storage_buffer_range);
  auto lhs = pattern(size_t(p.m) * p.k, 10), rhs = pattern(size_t(2) * p.k * p.n, 11);
  for (auto& x : rhs) x = round_to(DType::bf16, x);
  const auto want = reference::gmm(p, lhs, rhs);
  // vkgmm pads its buffers to whole texels: this rhs, ending mid-texel, keeps its view.
  EXPECT_TRUE(all_close(run_gmm_inputs_in(c, p, lhs, rhs, false, reads_texel_views(c, true)), want, 1e-3, 1e-2));
  EXPECT_TRUE(all_close(run_gmm_inputs_in(c, p, lhs, rhs, true, false), want, 1e-3, 1e-2)) << "an app's buffers";
  EXPECT_TRUE(all_close(run_gmm(limited_storage_ctx(), p, lhs, rhs), want, 1e-3, 1e-2)) << "texel loads off";
}

}  // namespace
}  // namespace vkgmm::test
