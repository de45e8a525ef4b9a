// Group sizes in a device buffer (DeviceGroupSizes): sizes that break the contract are taken as
// documented (negative as 0, offsets clamped at m) and reported in the status word, and nothing outside
// the views is touched: every operand, the sizes, the workspace and the status word sit between guard
// regions that are poisoned before and compared after (Guarded, in the harness). (Sizes that keep the
// contract: the sweeps and type tests run the device path beside the host path and compare bits.)
#include <cstring>
#include <functional>

#include "gpu_harness.hpp"
#include "interface.h"  // VKGMM_DISPATCH_WORDS

namespace vkgmm::test {
namespace {

const std::vector<std::vector<int32_t>> kHostile = {
    {5, -3, 20, 4},                          // a negative size
    {30, 30, 30, 30},                        // sum 120 > m
    {INT32_MAX, INT32_MAX, INT32_MAX, 1},    // huge
    {-1, -INT32_MAX - 1, 0, 60},             // the most negative, then all of m
    {0, 0, 0, 0},                            // nothing active
    {64, 0, 0, 0},                           // exactly m in the first group
};

// On both grids (DeviceGrid): the indirect one's command is written in the workspace, inside its view;
// and read in the kernel (a call of 64 rows on the direct schedule), with no workspace.
TEST_F(DeviceTest, HostileGmmSizesStayInsideTheViews) {
  for (int path = 0; path < 3; ++path)
  for (Schedule schedule : {Schedule::direct, Schedule::shared})
    for (const auto& sizes : kHostile) {
      if (path == 2 && schedule == Schedule::shared) continue;  // the build's, as path 0
      Context& c = ctx();
      const GridHook hook(c, path == 1 ? DeviceGrid::upper_bound : DeviceGrid::indirect);
      const SizesInKernelHook in_kernel(c, path == 2);
      std::mt19937 rng(7);
      GmmProblem host;
      host.m = 64;
      host.k = 12;
      host.n = 20;
      host.group_offset = 1;
      host.num_rhs_groups = 2;
      host.existing_out = true;
      host.schedule = schedule;
      uint32_t want_status = 0;
      host.group_sizes = sizes_taken(sizes, host.m, want_status);
      const auto lhs = random_values(size_t(host.m) * host.k, DType::f32, rng);
      const auto rhs = random_values(2 * size_t(host.k) * host.n, DType::f32, rng);
      const auto ex = random_values(size_t(host.m) * host.n, DType::f32, rng);
      const std::vector<float> want = run_gmm(c, host, lhs, rhs, ex);

      GmmProblem dev = host;
      dev.tiling = TilingChoice::of(GmmPlan(c, host).tiling());
      dev.group_sizes.clear();
      dev.device_group_sizes.count = 4;
      GmmPlan plan(c, dev);
      EXPECT_EQ(plan.workspace_bytes() == 0, path == 2);
      Guarded l = guarded_floats(c, lhs), r = guarded_floats(c, rhs), e = guarded_floats(c, ex);
      Guarded o(c, want.size() * 4), s(c, 16), status(c, 4), work(c, plan.workspace_bytes());
      s.set(sizes.data(), 16);
      c.submit_and_wait([&](VkCommandBuffer cb) {
        plan.record(cb, {l.view(), r.view(), o.view(), e.view(), s.view(), work.view(), status.view()});
      });
      EXPECT_TRUE(same_bits(floats(o), want)) << sizes[0] << ", " << sizes[1] << ", ...";
      uint32_t got_status = 0;
      std::memcpy(&got_status, status.get().data(), 4);
      EXPECT_EQ(got_status, want_status);
      for (const Guarded* g : {&l, &r, &e, &o, &s, &status, &work}) EXPECT_TRUE(g->guards_intact());
    }
}

TEST_F(DeviceTest, HostileTgmmSizesStayInsideTheViews) {
  for (const auto& sizes : kHostile) {
    std::mt19937 rng(9);
    TgmmProblem host;
    host.m = 64;
    host.k = 10;
    host.n = 18;
    host.group_offset = 1;
    host.num_actual_groups = 3;
    uint32_t want_status = 0;
    host.group_sizes = sizes_taken(sizes, host.m, want_status);
    const auto lhs = random_values(size_t(host.k) * host.m, DType::f32, rng);
    const auto rhs = random_values(size_t(host.m) * host.n, DType::f32, rng);
    const std::vector<float> want = run_tgmm(ctx(), host, lhs, rhs);

    TgmmProblem dev = host;
    dev.tiling = TilingChoice::of(TgmmPlan(ctx(), host).tiling());
    dev.group_sizes.clear();
    dev.device_group_sizes.count = 4;
    TgmmPlan plan(ctx(), dev);
    Guarded l = guarded_floats(ctx(), lhs), r = guarded_floats(ctx(), rhs);
    Guarded o(ctx(), want.size() * 4), s(ctx(), 16), status(ctx(), 4);
    s.set(sizes.data(), 16);
    // No workspace given: the plan's own.
    ctx().submit_and_wait([&](VkCommandBuffer cb) {
      plan.record(cb, {l.view(), r.view(), o.view(), {}, s.view(), {}, status.view()});
    });
    EXPECT_TRUE(same_bits(floats(o), want)) << sizes[0] << ", " << sizes[1] << ", ...";
    uint32_t got_status = 0;
    std::memcpy(&got_status, status.get().data(), 4);
    EXPECT_EQ(got_status, want_status);
    for (const Guarded* g : {&l, &r, &o, &s, &status}) EXPECT_TRUE(g->guards_intact());
  }
}

// Many groups (more than the metadata build's 256 invocations hold one each) and a status word left
// out: the workspace's own slot takes it.
TEST_F(DeviceTest, DeviceSizesWithManyGroups) {
  std::mt19937 rng(3);
  GmmProblem p;
  p.m = 700;
  p.k = 8;
  p.n = 8;
  p.group_sizes = make_group_sizes(Sizes::empty_ends, 600, 650, rng);
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(600 * size_t(p.k) * p.n, DType::f32, rng);
  EXPECT_TRUE(same_bits(run_gmm_device(ctx(), p, lhs, rhs), run_gmm(ctx(), p, lhs, rhs)));
  TgmmProblem t;
  t.m = p.m;
  t.k = 8;
  t.n = 8;
  t.group_sizes = p.group_sizes;
  t.group_offset = 100;
  const auto tl = random_values(size_t(t.k) * t.m, DType::f32, rng);
  const auto tr = random_values(size_t(t.m) * t.n, DType::f32, rng);
  EXPECT_TRUE(same_bits(run_tgmm_device(ctx(), t, tl, tr), run_tgmm(ctx(), t, tl, tr)));
}

// One plan recorded twice in one command buffer, into two outs, with no barrier between the records (the
// docs ask for none): a gmm with sizes on the host, one with device sizes sharing one workspace (on both
// grids), a tgmm with sizes on the host, a routed gmm that combines its slots, one that saves its
// pre-activations. Each out against the reference; in the `sync` run (tests/variants.txt) a hazard the
// layer sees between the records fails the test: vkgmm's build reading the workspace the earlier record
// wrote, or a buffer that both records bind where the module declares a write.
TEST_F(DeviceTest, DeviceSizesTgmmAndRoutedPlansRecordedTwice) {
  std::mt19937 rng(29);
  const std::vector<int32_t> sizes = {50, 0, 90, 60};
  auto twice = [&](const std::function<void(VkCommandBuffer, const BufferView&)>& record, size_t out_bytes) {
    Buffer o1 = poisoned(ctx(), out_bytes), o2 = poisoned(ctx(), out_bytes);
    ctx().submit_and_wait([&](VkCommandBuffer cb) {
      record(cb, o1.view());
      record(cb, o2.view());
    });
    return std::make_pair(download(o1, DType::f32, out_bytes / 4), download(o2, DType::f32, out_bytes / 4));
  };
  GmmProblem host;
  host.m = 200, host.k = 8, host.n = 8;
  host.group_sizes = sizes;
  const auto lhs = random_values(size_t(host.m * host.k), DType::f32, rng);
  const auto rhs = random_values(size_t(4 * host.k * host.n), DType::f32, rng);
  const std::vector<float> want = reference::gmm(host, lhs, rhs);
  Buffer a = upload(ctx(), DType::f32, lhs), b = upload(ctx(), DType::f32, rhs);
  {
    const GmmPlan plan(ctx(), host);
    const auto [o1, o2] = twice([&](VkCommandBuffer cb, const BufferView& out) { plan.record(cb, {a.view(), b.view(), out}); },
                                want.size() * 4);
    EXPECT_TRUE(all_close(o1, want, 1e-4, 1e-5) && all_close(o2, want, 1e-4, 1e-5)) << "gmm, host sizes";
  }
  for (const DeviceGrid grid : GridHook::both(ctx())) {
    const GridHook hook(ctx(), grid);
    GmmProblem p = host;
    p.group_sizes.clear();
    p.device_group_sizes.count = 4;
    const GmmPlan plan(ctx(), p);
    Buffer gs = ctx().create_buffer(sizes.size() * 4), work = ctx().create_buffer(plan.workspace_bytes());
    gs.upload(sizes.data(), sizes.size() * 4);
    const auto [o1, o2] = twice(
        [&](VkCommandBuffer cb, const BufferView& out) {
          GmmOperands ops{a.view(), b.view(), out};
          ops.group_sizes = gs.view(), ops.workspace = work.view();
          plan.record(cb, ops);
        },
        want.size() * 4);
    EXPECT_TRUE(all_close(o1, want, 1e-4, 1e-5) && all_close(o2, want, 1e-4, 1e-5)) << "gmm, device sizes";
  }
  {
    TgmmProblem t;
    t.m = 200, t.k = 8, t.n = 8;
    t.group_sizes = sizes;
    const auto tl = random_values(size_t(t.k * t.m), DType::f32, rng);
    const auto tr = random_values(size_t(t.m * t.n), DType::f32, rng);
    const std::vector<float> want_t = reference::tgmm(t, tl, tr);
    const TgmmPlan plan(ctx(), t);
    Buffer l = upload(ctx(), DType::f32, tl), r = upload(ctx(), DType::f32, tr);
    const auto [o1, o2] = twice(
        [&](VkCommandBuffer cb, const BufferView& out) { plan.record(cb, {l.view(), r.view(), out}); },
        want_t.size() * 4);
    EXPECT_TRUE(all_close(o1, want_t, 1e-4, 1e-5) && all_close(o2, want_t, 1e-4, 1e-5)) << "tgmm, host sizes";
  }
  {
    GmmProblem p;
    p.m = 24, p.k = 8, p.n = 8, p.num_rhs_groups = 4;
    p.routing = {2, false, true, 4};
    std::vector<int32_t> ids(size_t(p.m * 2));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7 + i / 2) % 5) - 1;  // -1 (none) to 3
    const auto x = random_values(size_t(p.m * p.k), DType::f32, rng);
    const auto weights = random_values(ids.size(), DType::f32, rng);
    const std::vector<float> want_r = reference::gmm_routed(p, x, rhs, ids, weights);
    Buffer l = upload(ctx(), DType::f32, x), w = upload(ctx(), DType::f32, weights);
    Buffer i = ctx().create_buffer(ids.size() * 4);
    i.upload(ids.data(), ids.size() * 4);
    for (const bool save : {false, true}) {
      p.epilogue.save_pre_activation = save;  // the kernel writes the workspace at its own binding too
      const GmmPlan plan(ctx(), p);
      Buffer work = ctx().create_buffer(plan.workspace_bytes());
      const auto [o1, o2] = twice(
          [&](VkCommandBuffer cb, const BufferView& out) {
            GmmOperands ops{l.view(), b.view(), out};
            ops.ids = i.view(), ops.weights = w.view(), ops.workspace = work.view();
            plan.record(cb, ops);
          },
          want_r.size() * 4);
      EXPECT_TRUE(all_close(o1, want_r, 1e-4, 1e-5) && all_close(o2, want_r, 1e-4, 1e-5))
          << "routed, combined, saving the pre-activation " << save;
    }
  }
}

// The rules of the device path's arguments, refused before anything is recorded.
TEST_F(DeviceTest, DeviceSizesErrors) {
  GmmProblem p;
  p.m = 16;
  p.k = 4;
  p.n = 4;
  p.device_group_sizes.count = 2;
  GmmProblem both = p;
  both.group_sizes = {8, 8};
  expect_invalid_argument([&] { GmmPlan(ctx(), both); }, "leave the host group_sizes empty");
  GmmProblem none = p;
  none.device_group_sizes.count = 0;
  none.device_group_sizes.expected_rows = 4;
  expect_invalid_argument([&] { GmmPlan(ctx(), none); }, "device_group_sizes.count = 0");
  GmmProblem hint = p;
  hint.device_group_sizes.expected_rows = -1;
  expect_invalid_argument([&] { GmmPlan(ctx(), hint); }, "expected_rows = -1");

  // A call this small reads its sizes in the kernel, with no workspace; the workspace's rules are the
  // build's.
  EXPECT_EQ(GmmPlan(ctx(), p).workspace_bytes(), 0u);
  const SizesInKernelHook build(ctx(), false);
  GmmPlan plan(ctx(), p);
  EXPECT_GT(plan.workspace_bytes(), 0u);
  EXPECT_EQ(plan.num_tiles(), -1);
  Buffer l = ctx().create_buffer(16 * 4 * 4), r = ctx().create_buffer(2 * 4 * 4 * 4), o = ctx().create_buffer(16 * 4 * 4);
  Buffer sizes = ctx().create_buffer(8), work = ctx().create_buffer(plan.workspace_bytes() + 64);
  const GmmOperands base{l.view(), r.view(), o.view(), {}, sizes.view(), {}, {}};
  plan.check(base);
  GmmOperands o1 = base;
  o1.group_sizes = {};
  expect_invalid_argument([&] { plan.check(o1); }, "group_sizes: the problem's group sizes are on the device");
  GmmOperands o2 = base;
  o2.group_sizes = sizes.view(0, 4);
  expect_invalid_argument([&] { plan.check(o2); }, "group_sizes: view of 4 bytes is too small");
  GmmOperands o3 = base;
  o3.workspace = work.view(4, plan.workspace_bytes());
  expect_invalid_argument([&] { plan.check(o3); }, "minStorageBufferOffsetAlignment");
  GmmOperands o4 = base;
  o4.workspace = work.view(0, plan.workspace_bytes() - 4);
  expect_invalid_argument([&] { plan.check(o4); }, "workspace: view of");
  GmmOperands o5 = base;
  o5.workspace = o.view();
  expect_invalid_argument([&] { plan.check(o5); }, "out overlaps workspace");
  GmmOperands o6 = base;
  o6.status = sizes.view(0, 4);
  expect_invalid_argument([&] { plan.check(o6); }, "status overlaps group_sizes");

  // An empty shard (m = 0) takes the device path's views like any other and records nothing.
  GmmProblem empty = p;
  empty.m = 0;
  GmmPlan empty_plan(ctx(), empty);
  EXPECT_GT(empty_plan.workspace_bytes(), 0u);
  // ... but its metadata build still runs: the status word reports hostile sizes all the same.
  Buffer status = ctx().create_buffer(4);
  const int32_t hostile[2] = {-1, 3};
  sizes.upload(hostile, 8);
  ctx().submit_and_wait(
      [&](VkCommandBuffer cb) { empty_plan.record(cb, {{}, r.view(), {}, {}, sizes.view(), {}, status.view()}); });
  uint32_t word = 0;
  status.download(&word, 4);
  EXPECT_EQ(word, device_status::negative_size | device_status::sum_above_m);
  // Sizes the op overwrites are refused (the next record would read its own output).
  GmmOperands over = base;
  over.group_sizes = o.view(0, 8);
  expect_invalid_argument([&] { plan.check(over); }, "out overlaps group_sizes");

  // On the host path the device views must stay null.
  GmmProblem host = p;
  host.device_group_sizes = {};
  host.group_sizes = {8, 8};
  GmmPlan host_plan(ctx(), host);
  EXPECT_EQ(host_plan.workspace_bytes(), 0u);
  expect_invalid_argument([&] { host_plan.check(base); },
                          "group_sizes: a view was given but the problem's group sizes are on the host");
}

// The indirect grid reads its command from the workspace, so an app's workspace must be an indirect
// buffer: one lent without indirect_usage, or never lent, gets the upper-bound grid; one lent with it
// the indirect grid. Each is checked against the host path, with the validation layer watching the
// indirect dispatch's buffer usage.
TEST_F(DeviceTest, AppWorkspacesTakeTheIndirectGridOnlyWhenLentAsIndirectBuffers) {
  Context& c = ctx();
  const GridHook hook(c, DeviceGrid::indirect);
  std::mt19937 rng(11);
  GmmProblem host;
  host.m = 96;
  host.k = 8;
  host.n = 12;
  host.group_sizes = {40, 0, 50};
  const auto lhs = random_values(size_t(host.m) * host.k, DType::f32, rng);
  const auto rhs = random_values(3 * size_t(host.k) * host.n, DType::f32, rng);
  const std::vector<float> want = run_gmm(c, host, lhs, rhs);
  GmmProblem dev = host;
  dev.tiling = TilingChoice::of(GmmPlan(c, host).tiling());
  dev.group_sizes.clear();
  dev.device_group_sizes.count = 3;
  const GmmPlan plan(c, dev);
  Buffer l = c.create_buffer(lhs.size() * 4), r = c.create_buffer(rhs.size() * 4), o = c.create_buffer(want.size() * 4);
  l.upload(lhs.data(), lhs.size() * 4);
  r.upload(rhs.data(), rhs.size() * 4);
  Buffer sizes = c.create_buffer(12);
  sizes.upload(host.group_sizes.data(), 12);
  const VkBufferUsageFlags storage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  AppBuffer plain(c, std::vector<uint8_t>(plan.workspace_bytes()), storage);
  AppBuffer indirect(c, std::vector<uint8_t>(plan.workspace_bytes()), storage | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT);
  AppBuffer unlent(c, std::vector<uint8_t>(plan.workspace_bytes()), storage);
  Buffer lent_plain = c.borrow_buffer(plain.buffer, plan.workspace_bytes(), false);
  Buffer lent_indirect = c.borrow_buffer(indirect.buffer, plan.workspace_bytes(), false, true);
  for (VkBuffer work : {plain.buffer, indirect.buffer, unlent.buffer}) {
    const std::vector<float> poison(want.size(), -7.0f);
    o.upload(poison.data(), poison.size() * 4);
    c.submit_and_wait([&](VkCommandBuffer cb) {
      plan.record(cb, {l.view(), r.view(), o.view(), {}, sizes.view(), {work, 0, plan.workspace_bytes()}, {}});
    });
    std::vector<float> got(want.size());
    o.download(got.data(), got.size() * 4);
    EXPECT_TRUE(same_bits(got, want)) << (work == indirect.buffer ? "lent as indirect" : "not an indirect buffer");
  }
  // The indirect one holds the command the build wrote: (n tiles) x the real visits, in y, then their
  // count (the persistent grid's loop bound).
  uint32_t command[VKGMM_DISPATCH_WORDS];
  const size_t at = plan.workspace_bytes() - (VKGMM_DISPATCH_WORDS + 1) * sizeof(uint32_t);  // before the status word
  std::memcpy(command, static_cast<const uint8_t*>(indirect.mapped) + at, sizeof command);
  EXPECT_GE(command[0], 1u);
  EXPECT_GE(command[1], 1u);
  EXPECT_EQ(command[2], 1u);
  EXPECT_EQ(command[3], command[1]);
  // ... and the plain one was left to the upper-bound grid: no command there.
  uint32_t plain_command[VKGMM_DISPATCH_WORDS];
  std::memcpy(plain_command, static_cast<const uint8_t*>(plain.mapped) + at, sizeof plain_command);
  EXPECT_EQ(plain_command[0], 0u);
}

// The tests' grid hook (tiling_device.hpp's grid), with which run_gmm_device runs both grids on one
// context: a plan made under it takes that grid whatever the context's options say. The indirect grid's
// build writes its command into the workspace (lent as an indirect buffer); the upper-bound grid's leaves
// it as it was.
TEST_F(DeviceTest, TheTestGridHookPicksThePlansGrid) {
  Context& c = ctx();
  const SizesInKernelHook build(c, false);  // 40 rows would read their sizes in the kernel: no grid
  GmmProblem dev;
  dev.m = 40;
  dev.k = 8;
  dev.n = 12;
  dev.device_group_sizes.count = 2;
  const std::vector<int32_t> group_sizes = {30, 10};
  Buffer l = c.create_buffer(size_t(dev.m) * dev.k * 4), r = c.create_buffer(2 * size_t(dev.k) * dev.n * 4);
  Buffer o = c.create_buffer(size_t(dev.m) * dev.n * 4), sizes = c.create_buffer(8);
  sizes.upload(group_sizes.data(), 8);
  for (DeviceGrid grid : {DeviceGrid::indirect, DeviceGrid::upper_bound}) {
    const GmmPlan plan = [&] {
      const GridHook hook(c, grid);
      return GmmPlan(c, dev);
    }();
    const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
    AppBuffer work(c, std::vector<uint8_t>(plan.workspace_bytes()), usage);
    Buffer lent = c.borrow_buffer(work.buffer, plan.workspace_bytes(), false, true);
    c.submit_and_wait([&](VkCommandBuffer cb) {
      plan.record(cb, {l.view(), r.view(), o.view(), {}, sizes.view(), {work.buffer, 0, plan.workspace_bytes()}, {}});
    });
    uint32_t groups_x = ~0u;  // the command's x, before its y, z, the visit count and the status word
    const size_t at = plan.workspace_bytes() - (VKGMM_DISPATCH_WORDS + 1) * sizeof(uint32_t);
    std::memcpy(&groups_x, static_cast<const uint8_t*>(work.mapped) + at, sizeof groups_x);
    if (grid == DeviceGrid::indirect) EXPECT_GE(groups_x, 1u) << "indirect: the build writes the command";
    else EXPECT_EQ(groups_x, 0u) << "upper bound: no command";
  }
}

}  // namespace
}  // namespace vkgmm::test
