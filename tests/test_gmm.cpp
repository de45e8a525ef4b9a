// gmm on the device against vkgmm::reference: shapes, group-size patterns, transposes, tilings, both
// schedules, sharding, existing_out, zero-fill and NaN isolation.
#include <cmath>
#include <limits>

#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

struct GmmCase {
  int64_t m, k, n, G;
  Sizes sizes;
  bool transpose;
  std::optional<Tiling> tiling;  // nullopt: automatic
  Schedule schedule;
  bool shard;  // group_offset and a G_local window, with existing_out
  uint32_t seed;
};

std::string case_name(const ::testing::TestParamInfo<GmmCase>& info) {
  const GmmCase& c = info.param;
  std::string s = "m" + std::to_string(c.m) + "k" + std::to_string(c.k) + "n" + std::to_string(c.n) + "g" +
                  std::to_string(c.G) + "_" + sizes_name(c.sizes) + (c.transpose ? "_T" : "") + "_" +
                  schedule_name(c.schedule);
  if (c.tiling) s += "_t" + std::to_string(c.tiling->tm) + "x" + std::to_string(c.tiling->tk) + "x" +
                     std::to_string(c.tiling->tn);
  if (c.shard) s += "_shard";
  return s + "_" + std::to_string(info.index);
}

std::vector<GmmCase> cases() {
  std::vector<GmmCase> out;
  struct Shape { int64_t m, k, n, G; };
  const Shape shapes[] = {
      {1, 1, 1, 1},       // the smallest problem
      {37, 19, 23, 4},    // m, k, n multiples of nothing
      {8, 3, 5, 6},       // k and n below a tile; more groups than m tiles
      {96, 2048, 24, 3},  // long K
      {200, 64, 72, 16},  // many groups
  };
  const Sizes kinds[] = {Sizes::random, Sizes::empty_ends, Sizes::one_group_all, Sizes::split_tiles,
                         Sizes::sum_below_m};
  const std::optional<Tiling> tilings[] = {std::nullopt, Tiling{128, 128, 128}, Tiling{64, 64, 64},
                                           Tiling{32, 32, 32}, Tiling{16, 128, 64}};
  uint32_t seed = 1;
  int i = 0;
  for (const Shape& s : shapes)
    for (Sizes kind : kinds) {
      if (s.G == 1 && kind != Sizes::random && kind != Sizes::sum_below_m) continue;
      out.push_back({s.m, s.k, s.n, s.G, kind, i % 2 == 1, tilings[i % 5],
                     i % 2 == 0 ? Schedule::direct : Schedule::shared, i % 3 == 2 && s.G > 1, seed++});
      ++i;
    }
  // Every named tiling on both schedules, on one jagged shape.
  for (const auto& t : tilings)
    for (Schedule sch : {Schedule::shared, Schedule::direct})
      out.push_back({130, 40, 70, 7, Sizes::split_tiles, false, t, sch, false, seed++});
  return out;
}

class GmmTest : public DeviceTest, public ::testing::WithParamInterface<GmmCase> {};

TEST_P(GmmTest, MatchesReference) {
  const GmmCase& c = GetParam();
  std::mt19937 rng(c.seed);
  GmmProblem p;
  p.m = c.m;
  p.k = c.k;
  p.n = c.n;
  p.group_sizes = make_group_sizes(c.sizes, c.G, c.m, rng);
  p.transpose_rhs = c.transpose;
  if (c.tiling) p.tiling = TilingChoice::of(*c.tiling);
  p.schedule = c.schedule;
  int64_t g_local = c.G;
  if (c.shard) {
    p.group_offset = c.G / 3;
    g_local = std::max<int64_t>(1, c.G / 2);
    p.num_rhs_groups = g_local;
    p.existing_out = true;
  }
  auto lhs = random_values(size_t(c.m) * c.k, p.lhs_type, rng);
  auto rhs = random_values(size_t(g_local) * c.k * c.n, p.rhs_type, rng);
  std::vector<float> ex;
  if (p.existing_out) ex = random_values(size_t(c.m) * c.n, p.out_type, rng);
  auto got = run_gmm(ctx(), p, lhs, rhs, ex);
  auto want = reference::gmm(p, lhs, rhs, ex);
  EXPECT_TRUE(all_close(got, want, 1e-3, 1e-5));
  // The same problem with its group sizes in a device buffer: the host path's bits.
  EXPECT_TRUE(same_bits(run_gmm_device(ctx(), p, lhs, rhs, ex), got)) << "device group sizes";
}

INSTANTIATE_TEST_SUITE_P(Sweep, GmmTest, ::testing::ValuesIn(cases()), case_name);

// m = 0: nothing to do, and nothing goes wrong.
TEST_F(DeviceTest, GmmEmptyM) {
  GmmProblem p;
  p.m = 0;
  p.k = 4;
  p.n = 4;
  p.group_sizes = {0, 0};
  std::mt19937 rng(5);
  auto rhs = random_values(2 * 4 * 4, DType::f32, rng);
  EXPECT_TRUE(run_gmm(ctx(), p, {}, rhs).empty());
}

// An empty shard (m = 0) with existing_out: the view is expected exactly as for any m (nothing is
// written), and one missing is refused.
TEST_F(DeviceTest, GmmEmptyMWithExistingOut) {
  GmmProblem p;
  p.m = 0;
  p.k = 4;
  p.n = 4;
  p.group_sizes = {0, 0};
  p.existing_out = true;
  Buffer in = ctx().create_buffer(4), rhs = ctx().create_buffer(2 * 4 * 4 * 4), out = poisoned(ctx(), 4);
  GmmPlan plan(ctx(), p);
  ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {in.view(), rhs.view(), out.view(), out.view()}); });
  EXPECT_TRUE(still_poisoned(out, 4)) << "an empty shard wrote to out";
  try {
    plan.check({in.view(), rhs.view(), out.view(), {}});
    ADD_FAILURE() << "a missing existing_out view was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("existing_out"), std::string::npos) << e.what();
  }
}

// JAX's test_gmm_sharded_groups: computing shard by shard into existing_out equals one full gmm.
TEST_F(DeviceTest, GmmShardedStitching) {
  for (Schedule sch : {Schedule::direct, Schedule::shared}) {
    std::mt19937 rng(11);
    const int64_t m = 90, k = 24, n = 20, G = 8, shard = 2;
    GmmProblem full;
    full.m = m;
    full.k = k;
    full.n = n;
    full.group_sizes = make_group_sizes(Sizes::split_tiles, G, m, rng);
    full.group_sizes[3] = 0;
    full.schedule = sch;
    auto lhs = random_values(size_t(m) * k, DType::f32, rng);
    auto rhs = random_values(size_t(G) * k * n, DType::f32, rng);
    auto want = reference::gmm(full, lhs, rhs);

    std::vector<float> out(size_t(m) * n, 0.0f);
    for (int64_t off = 0; off < G; off += shard) {
      GmmProblem p = full;
      p.group_offset = off;
      p.num_rhs_groups = shard;
      p.existing_out = true;
      std::vector<float> rhs_shard(rhs.begin() + off * k * n, rhs.begin() + (off + shard) * k * n);
      out = run_gmm(ctx(), p, lhs, rhs_shard, out);
    }
    EXPECT_TRUE(all_close(out, want, 1e-3, 1e-5)) << schedule_name(sch);
  }
}

// NaN weights of one group never reach another group's rows; that group's own rows are NaN.
TEST_F(DeviceTest, GmmNaNIsolation) {
  for (Schedule sch : {Schedule::direct, Schedule::shared}) {
    std::mt19937 rng(3);
    GmmProblem p;
    p.m = 50;
    p.k = 16;
    p.n = 12;
    p.group_sizes = {7, 0, 13, 30};  // group boundaries inside tiles
    p.schedule = sch;
    p.tiling = TilingChoice::of(Tiling{16, 8, 8});
    auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
    auto rhs = random_values(size_t(4) * p.k * p.n, DType::f32, rng);
    const size_t g2 = size_t(2) * p.k * p.n;
    for (size_t i = 0; i < size_t(p.k * p.n); ++i) rhs[g2 + i] = std::numeric_limits<float>::quiet_NaN();
    auto got = run_gmm(ctx(), p, lhs, rhs);
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t c = 0; c < p.n; ++c) {
        const bool in_g2 = r >= 7 && r < 20;
        EXPECT_EQ(std::isnan(got[r * p.n + c]), in_g2) << "row " << r << " col " << c << " " << schedule_name(sch);
      }
  }
}

// existing_out in place: the output buffer is also existing_out; inactive rows keep their values.
TEST_F(DeviceTest, GmmExistingOutInPlace) {
  std::mt19937 rng(9);
  GmmProblem p;
  p.m = 40;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {10, 10, 10, 5};
  p.group_offset = 1;
  p.num_rhs_groups = 2;
  p.existing_out = true;
  auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto rhs = random_values(size_t(2) * p.k * p.n, DType::f32, rng);
  auto ex = random_values(size_t(p.m) * p.n, DType::f32, rng);
  Buffer l = ctx().create_buffer(lhs.size() * 4), r = ctx().create_buffer(rhs.size() * 4),
         o = ctx().create_buffer(ex.size() * 4);
  l.upload(lhs.data(), lhs.size() * 4);
  r.upload(rhs.data(), rhs.size() * 4);
  o.upload(ex.data(), ex.size() * 4);
  gmm(ctx(), p, {l.view(), r.view(), o.view(), o.view()});
  std::vector<float> got(ex.size());
  o.download(got.data(), got.size() * 4);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs, ex), 1e-3, 1e-5));
}

// A tiling lookup function is consulted with the problem's (m, k, n).
TEST_F(DeviceTest, GmmTilingLookup) {
  std::mt19937 rng(4);
  GmmProblem p;
  p.m = 33;
  p.k = 9;
  p.n = 17;
  p.group_sizes = {11, 22};
  int64_t seen_m = -1, seen_k = -1, seen_n = -1;
  p.tiling = TilingChoice::of([&](int64_t m, int64_t k, int64_t n) -> std::optional<Tiling> {
    seen_m = m, seen_k = k, seen_n = n;
    return Tiling{8, 4, 8};
  });
  auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto rhs = random_values(size_t(2) * p.k * p.n, DType::f32, rng);
  EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), reference::gmm(p, lhs, rhs), 1e-3, 1e-5));
  EXPECT_EQ(seen_m, 33);
  EXPECT_EQ(seen_k, 9);
  EXPECT_EQ(seen_n, 17);
  GmmPlan plan(ctx(), p);
  EXPECT_EQ(plan.tiling(), (Tiling{8, 4, 8}));
}

// Offsets into shared buffers: operands at element offsets that are not descriptor-aligned, and not
// multiples of 4 (the direct schedule's vector loads then fall back to scalar loads) or multiples of 4.
// Visits of a few rows (decode) read whole weight rows per workgroup where n allows (up to 1024
// columns), else 128-column slices; either way the result matches the reference. These are a CPU
// device's direct-schedule tiles (a GPU gives such visits 32-column tiles with K slices, tested in
// test_gpu_decode.cpp): planned as a CPU device, so every device checks and runs them.
TEST_F(DeviceTest, GmmDecodeTilesStreamWholeWeightRows) {
  Context cx = cpu_planned_context();
  struct Case {
    int64_t n;
    bool transpose;
    Tiling want;
  };
  // The row itself, to a multiple of 32 columns (n = 200: 224, not the next power of two).
  for (const Case& c : {Case{1024, false, {2, 4, 1024}}, Case{200, false, {4, 4, 224}}, Case{768, false, {2, 4, 768}},
                        Case{1024, true, {4, 4, 128}}, Case{2048, false, {4, 4, 128}}}) {
    std::mt19937 rng(uint32_t(c.n));
    GmmProblem p;
    p.m = 16;
    p.k = 24;
    p.n = c.n;
    p.group_sizes = make_group_sizes(Sizes::random, 8, p.m, rng);
    p.transpose_rhs = c.transpose;
    p.schedule = Schedule::direct;
    const GmmPlan plan(cx, p);
    // The m tile follows the group sizes (1 or 2 rows for these, at most 2 with wide tiles).
    EXPECT_LE(plan.tiling().tm, c.want.tm) << "n " << c.n << " T " << c.transpose;
    EXPECT_EQ(plan.tiling().tn, c.want.tn) << "n " << c.n << " T " << c.transpose;
    expect_gmm_matches_reference(cx, p, 40 + uint32_t(c.n));
  }
}

// Rows are stored 4 adjacent columns at a time where out's element offset is a multiple of 4 (one vector
// store per group of columns), element by element elsewhere. Every element offset within a 16-byte
// alignment unit (4 f32, 8 bf16 elements: bf16 at 4 takes the vector stores with a nonzero offset), both
// schedules, n with and without groups of 4 columns: against the reference, and the out buffer's other
// elements, the 16-bit neighbours sharing a word with the first and last element too, untouched. With
// lhs one element off (scalar loads, whose columns are not in groups of 4 on the direct schedule) the
// stores go scalar too, whatever out's offset.
TEST_F(DeviceTest, GmmStoresAtEveryOutOffset) {
  for (DType out : {DType::f32, DType::bf16})
    for (Schedule schedule : {Schedule::direct, Schedule::shared})
      for (int64_t n : {24, 22}) {
        const size_t es = dtype_size(out), unit = 16 / es;
        for (size_t off = 0; off < unit + 1; ++off) {
          const size_t lo = off == unit ? 1 : 0;  // the last round: out at 0, lhs at 1
          std::mt19937 rng(uint32_t(37 + off + n));
          GmmProblem p;
          p.m = 19;
          p.k = 12;
          p.n = n;
          p.group_sizes = {7, 0, 12};
          p.out_type = out;
          p.schedule = schedule;
          const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
          const auto rhs = random_values(size_t(3) * p.k * p.n, DType::f32, rng);
          const size_t count = size_t(p.m) * p.n, tail = unit;
          Buffer l = ctx().create_buffer((lo + lhs.size()) * 4), r = ctx().create_buffer(rhs.size() * 4);
          l.upload(lhs.data(), lhs.size() * 4, lo * 4);
          r.upload(rhs.data(), rhs.size() * 4);
          const size_t oo = off == unit ? 0 : off;
          Buffer o = ctx().create_buffer((oo + count + tail) * es);
          const std::vector<uint8_t> poison(o.size(), Guarded::kPoison);
          o.upload(poison.data(), poison.size());
          gmm(ctx(), p, {l.view(lo * 4, lhs.size() * 4), r.view(), o.view(oo * es, count * es), {}});
          std::vector<uint8_t> bytes(o.size());
          o.download(bytes.data(), bytes.size());
          const std::vector<float> got = decode(out, bytes.data() + oo * es, count);
          const Tolerance tol = tolerance_for(DType::f32, DType::f32, out);
          EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), tol.atol, tol.rtol))
              << dtype_name(out) << " " << (schedule == Schedule::direct ? "direct" : "shared") << " n " << n
              << " offset " << oo << " lhs offset " << lo;
          for (size_t b = 0; b < bytes.size(); ++b)
            if (b < oo * es || b >= (oo + count) * es)
              ASSERT_EQ(bytes[b], Guarded::kPoison) << "byte " << b << " offset " << oo;
        }
      }
}

TEST_F(DeviceTest, GmmUnalignedViews) {
  for (size_t lo : {3, 4})
    for (bool transpose : {false, true}) {
      std::mt19937 rng(21);
      GmmProblem p;
      p.m = 20;
      p.k = 8;  // k and n multiples of 4: vector loads where the offsets allow
      p.n = 12;
      p.group_sizes = {5, 15};
      p.transpose_rhs = transpose;
      p.schedule = Schedule::direct;
      auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
      auto rhs = random_values(size_t(2) * p.k * p.n, DType::f32, rng);
      const size_t ro = lo + 4, oo = 5;  // element gaps between the operands
      Buffer b = ctx().create_buffer((lo + lhs.size() + ro + rhs.size() + oo + p.m * p.n) * 4);
      std::vector<uint8_t> zeros(b.size(), 0);  // new device memory holds whatever was there before
      b.upload(zeros.data(), zeros.size());
      b.upload(lhs.data(), lhs.size() * 4, lo * 4);
      const size_t rb = (lo + lhs.size() + ro) * 4;
      b.upload(rhs.data(), rhs.size() * 4, rb);
      const size_t ob = rb + (rhs.size() + oo) * 4;
      gmm(ctx(), p, {b.view(lo * 4, lhs.size() * 4), b.view(rb, rhs.size() * 4), b.view(ob, p.m * p.n * 4), {}});
      std::vector<float> got(p.m * p.n);
      b.download(got.data(), got.size() * 4, ob);
      EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), 1e-3, 1e-5)) << "offset " << lo << " T " << transpose;
      // The bytes before the operands are untouched.
      std::vector<float> head(lo);
      b.download(head.data(), lo * 4, 0);
      for (float h : head) EXPECT_EQ(h, 0.0f);
    }
}

}  // namespace
}  // namespace vkgmm::test

namespace vkgmm::test {
namespace {

// Fill visits write every inactive row once: with existing_out the very range of out, on the packed
// 16-bit path (read-modify-write of half-words), a row written by two visits could lose its value.
TEST_F(DeviceTest, GmmFillInPlacePacked16) {
  ContextOptions packed;
  packed.storage16 = false;
  Context c = make_context(packed);
  std::mt19937 rng(13);
  GmmProblem p;
  p.m = 256;
  p.k = 4;
  p.n = 128;
  p.group_sizes = {1, 1, 200};
  p.group_offset = 1;
  p.num_rhs_groups = 1;
  p.out_type = DType::bf16;
  p.existing_out = true;
  p.tiling = TilingChoice::of(Tiling{128, 4, 128});
  auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto rhs = random_values(size_t(p.k) * p.n, DType::f32, rng);
  auto ex = random_values(size_t(p.m) * p.n, DType::bf16, rng);
  auto want = reference::gmm(p, lhs, rhs, ex);
  Buffer l = c.create_buffer(lhs.size() * 4), r = c.create_buffer(rhs.size() * 4),
         o = c.create_buffer(ex.size() * 2);
  l.upload(lhs.data(), lhs.size() * 4);
  r.upload(rhs.data(), rhs.size() * 4);
  GmmPlan plan(c, p);
  const std::vector<uint8_t> ex_bytes = encode(DType::bf16, ex);
  for (int iter = 0; iter < 20; ++iter) {
    o.upload(ex_bytes.data(), ex_bytes.size());
    c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), r.view(), o.view(), o.view()}); });
    std::vector<uint8_t> got(ex_bytes.size());
    o.download(got.data(), got.size());
    ASSERT_TRUE(all_close(decode(DType::bf16, got.data(), ex.size()), want, 1e-3, 1e-2)) << "iteration " << iter;
  }
}

// tgmm accumulating into out in place (existing_out the very range of out) on the packed 16-bit path:
// each output element reads its word of existing_out, then changes its half of the same word while the
// neighbour's invocation changes the other half. Both schedules, f16 and bf16, odd n (halves of a word in
// different tiles' columns).
TEST_F(DeviceTest, TgmmAccumulateInPlacePacked16) {
  ContextOptions packed;
  packed.storage16 = false;
  Context c = make_context(packed);
  for (Schedule sch : {Schedule::direct, Schedule::shared})
    for (DType t : {DType::f16, DType::bf16}) {
      std::mt19937 rng(17);
      TgmmProblem p;
      p.m = 40;
      p.k = 24;
      p.n = 37;
      p.group_sizes = {9, 0, 31};
      p.out_type = t;
      p.existing_out = true;
      p.schedule = sch;
      auto lhs = random_values(size_t(p.k) * p.m, DType::f32, rng);
      auto rhs = random_values(size_t(p.m) * p.n, DType::f32, rng);
      auto ex = random_values(size_t(3) * p.k * p.n, t, rng);
      const auto want = reference::tgmm(p, lhs, rhs, ex);
      Buffer l = c.create_buffer(lhs.size() * 4), r = c.create_buffer(rhs.size() * 4), o = c.create_buffer(ex.size() * 2);
      l.upload(lhs.data(), lhs.size() * 4);
      r.upload(rhs.data(), rhs.size() * 4);
      const std::vector<uint8_t> ex_bytes = encode(t, ex);
      TgmmPlan plan(c, p);
      for (int iter = 0; iter < 5; ++iter) {
        o.upload(ex_bytes.data(), ex_bytes.size());
        c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {l.view(), r.view(), o.view(), o.view()}); });
        std::vector<uint8_t> got(ex_bytes.size());
        o.download(got.data(), got.size());
        ASSERT_TRUE(all_close(decode(t, got.data(), ex.size()), want, 1e-3, 1e-2))
            << schedule_name(sch) << " " << dtype_name(t) << " iteration " << iter;
      }
    }
}

// A tiling too large for one invocation's accumulators runs with more invocations, as the contract asks
// of any positive tiling that fits the device.
TEST_F(DeviceTest, GmmLargeTilingRuns) {
  for (Schedule sch : {Schedule::direct, Schedule::shared}) {
    std::mt19937 rng(14);
    GmmProblem p;
    p.m = 600;
    p.k = 12;
    p.n = 520;
    p.group_sizes = {300, 0, 250};
    p.schedule = sch;
    p.tiling = TilingChoice::of(Tiling{512, 512, 512});
    auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
    auto rhs = random_values(size_t(3) * p.k * p.n, DType::f32, rng);
    EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs), reference::gmm(p, lhs, rhs), 1e-3, 1e-5)) << schedule_name(sch);
  }
}

// A record callback may create and destroy vkgmm objects (plans, buffers) without deadlocking.
TEST_F(DeviceTest, PlanMadeInsideTheRecordCallback) {
  std::mt19937 rng(15);
  GmmProblem p;
  p.m = 16;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {6, 10};
  auto lhs = random_values(16 * 8, DType::f32, rng), rhs = random_values(2 * 8 * 8, DType::f32, rng);
  Buffer l = ctx().create_buffer(lhs.size() * 4), r = ctx().create_buffer(rhs.size() * 4),
         o = ctx().create_buffer(16 * 8 * 4);
  l.upload(lhs.data(), lhs.size() * 4);
  r.upload(rhs.data(), rhs.size() * 4);
  std::unique_ptr<GmmPlan> keep;
  ctx().submit_and_wait([&](VkCommandBuffer cb) {
    Buffer scratch = ctx().create_buffer(64);  // made and destroyed while recording
    keep = std::make_unique<GmmPlan>(ctx(), p);
    keep->record(cb, {l.view(), r.view(), o.view(), {}});
  });
  std::vector<float> got(16 * 8);
  o.download(got.data(), got.size() * 4);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), 1e-3, 1e-5));
}

}  // namespace
}  // namespace vkgmm::test
