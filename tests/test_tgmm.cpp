// tgmm on the device against vkgmm::reference.
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

struct TgmmCase {
  int64_t m, k, n, G;
  Sizes sizes;
  int64_t group_offset, num_actual_groups;  // -1: G - group_offset
  bool existing_out;
  std::optional<Tiling> tiling;
  Schedule schedule;
  uint32_t seed;
};

std::string case_name(const ::testing::TestParamInfo<TgmmCase>& info) {
  const TgmmCase& c = info.param;
  return "m" + std::to_string(c.m) + "k" + std::to_string(c.k) + "n" + std::to_string(c.n) + "g" +
         std::to_string(c.G) + "o" + std::to_string(c.group_offset) + "a" +
         std::to_string(c.num_actual_groups < 0 ? 0 : c.num_actual_groups) + "_" + sizes_name(c.sizes) +
         (c.existing_out ? "_ex" : "") + "_" + schedule_name(c.schedule) + "_" + std::to_string(info.index);
}

std::vector<TgmmCase> cases() {
  std::vector<TgmmCase> out;
  uint32_t seed = 100;
  // Shapes and group patterns, both schedules.
  struct Shape { int64_t m, k, n, G; };
  const Shape shapes[] = {{1, 1, 1, 1}, {37, 19, 23, 4}, {8, 3, 5, 6}, {300, 40, 24, 5}, {64, 70, 66, 9}};
  const Sizes kinds[] = {Sizes::random, Sizes::empty_ends, Sizes::one_group_all, Sizes::split_tiles,
                         Sizes::sum_below_m};
  const std::optional<Tiling> tilings[] = {std::nullopt, Tiling{128, 128, 128}, Tiling{64, 64, 64},
                                           Tiling{32, 32, 32}, Tiling{16, 128, 64}};
  int i = 0;
  for (const Shape& s : shapes)
    for (Sizes kind : kinds) {
      if (s.G == 1 && kind != Sizes::random) continue;
      out.push_back({s.m, s.k, s.n, s.G, kind, 0, -1, i % 2 == 1, tilings[i % 5],
                     i % 2 == 0 ? Schedule::direct : Schedule::shared, seed++});
      ++i;
    }
  // The sharding windows (G, group_offset, num_actual_groups), with and without existing_out.
  const int64_t windows[][3] = {{16, 2, 4}, {16, 0, 8}, {32, 4, 4}, {5, 4, 1}};
  for (auto& w : windows)
    for (bool ex : {false, true})
      out.push_back({96, 12, 10, w[0], Sizes::empty_ends, w[1], w[2], ex, std::nullopt,
                     ex ? Schedule::shared : Schedule::direct, seed++});
  return out;
}

class TgmmTest : public DeviceTest, public ::testing::WithParamInterface<TgmmCase> {};

TEST_P(TgmmTest, MatchesReference) {
  const TgmmCase& c = GetParam();
  std::mt19937 rng(c.seed);
  TgmmProblem p;
  p.m = c.m;
  p.k = c.k;
  p.n = c.n;
  p.group_sizes = make_group_sizes(c.sizes, c.G, c.m, rng);
  p.group_offset = c.group_offset;
  p.num_actual_groups = c.num_actual_groups;
  p.existing_out = c.existing_out;
  if (c.tiling) p.tiling = TilingChoice::of(*c.tiling);
  p.schedule = c.schedule;
  const int64_t groups = c.num_actual_groups < 0 ? c.G - c.group_offset : c.num_actual_groups;
  auto lhs = random_values(size_t(c.k) * c.m, p.lhs_type, rng);
  auto rhs = random_values(size_t(c.m) * c.n, p.rhs_type, rng);
  std::vector<float> ex;
  if (p.existing_out) ex = random_values(size_t(groups) * c.k * c.n, p.out_type, rng);
  auto got = run_tgmm(ctx(), p, lhs, rhs, ex);
  EXPECT_TRUE(all_close(got, reference::tgmm(p, lhs, rhs, ex), 1e-3, 1e-5));
  EXPECT_TRUE(same_bits(run_tgmm_device(ctx(), p, lhs, rhs, ex), got)) << "device group sizes";
}

INSTANTIATE_TEST_SUITE_P(Sweep, TgmmTest, ::testing::ValuesIn(cases()), case_name);

// The layouts the backward uses: lhs given as [m, k], the output stored [n, k].
TEST_F(DeviceTest, TgmmTransposedLayouts) {
  for (Schedule sch : {Schedule::direct, Schedule::shared})
    for (bool lhs_mk : {false, true})
      for (bool out_nk : {false, true}) {
        std::mt19937 rng(7);
        TgmmProblem p;
        p.m = 45;
        p.k = 13;
        p.n = 11;
        p.group_sizes = {9, 0, 30, 6};
        p.lhs_mk = lhs_mk;
        p.out_nk = out_nk;
        p.schedule = sch;
        auto lhs = random_values(size_t(p.k) * p.m, DType::f32, rng);
        auto rhs = random_values(size_t(p.m) * p.n, DType::f32, rng);
        EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs), reference::tgmm(p, lhs, rhs), 1e-3, 1e-5))
            << schedule_name(sch) << " lhs_mk " << lhs_mk << " out_nk " << out_nk;
      }
}

// Every group empty (m = 0 included): outputs are zero, or existing_out.
TEST_F(DeviceTest, TgmmAllEmpty) {
  std::mt19937 rng(8);
  for (int64_t m : {0, 10}) {
    TgmmProblem p;
    p.m = m;
    p.k = 5;
    p.n = 6;
    p.group_sizes = {0, 0, 0};
    p.existing_out = m == 10;
    auto lhs = random_values(size_t(p.k) * m, DType::f32, rng);
    auto rhs = random_values(size_t(m) * p.n, DType::f32, rng);
    std::vector<float> ex;
    if (p.existing_out) ex = random_values(3 * 5 * 6, DType::f32, rng);
    EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs, ex), reference::tgmm(p, lhs, rhs, ex), 0, 0)) << m;
  }
}

// rhs at an element offset that is not a multiple of 4: the vector loads fall back to scalar loads.
TEST_F(DeviceTest, TgmmUnalignedRhs) {
  for (size_t ro : {3, 4}) {
    std::mt19937 rng(12);
    TgmmProblem p;
    p.m = 30;
    p.k = 6;
    p.n = 8;
    p.group_sizes = {13, 17};
    p.schedule = Schedule::direct;
    auto lhs = random_values(size_t(p.k) * p.m, DType::f32, rng);
    auto rhs = random_values(size_t(p.m) * p.n, DType::f32, rng);
    Buffer l = ctx().create_buffer(lhs.size() * 4), r = ctx().create_buffer((ro + rhs.size()) * 4),
           o = ctx().create_buffer(2 * p.k * p.n * 4);
    l.upload(lhs.data(), lhs.size() * 4);
    r.upload(rhs.data(), rhs.size() * 4, ro * 4);
    tgmm(ctx(), p, {l.view(), r.view(ro * 4, rhs.size() * 4), o.view(), {}});
    std::vector<float> got(2 * p.k * p.n);
    o.download(got.data(), got.size() * 4);
    EXPECT_TRUE(all_close(got, reference::tgmm(p, lhs, rhs), 1e-3, 1e-5)) << "rhs offset " << ro;
  }
}

// The direct schedule's vector loads of both operands (lhs stored [m, k], k and n multiples of 4), with
// each operand at a 4-aligned and an unaligned element offset (the kernel then falls back per operand).
TEST_F(DeviceTest, TgmmVectorLoadsLhsMk) {
  for (size_t lo : {0, 3})
    for (size_t ro : {0, 1}) {
      std::mt19937 rng(40 + lo + ro);
      TgmmProblem p;
      p.m = 47;
      p.k = 20;
      p.n = 16;
      p.group_sizes = {9, 0, 30, 6};  // group ends not multiples of 4; one empty group; 2 rows past them
      p.lhs_mk = true;
      p.out_nk = ro == 1;
      p.schedule = Schedule::direct;
      p.tiling = TilingChoice::of(Tiling{4, 16, 8});  // several k blocks, k groups of 4 past the end
      auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
      auto rhs = random_values(size_t(p.m) * p.n, DType::f32, rng);
      Buffer l = ctx().create_buffer((lo + lhs.size()) * 4), r = ctx().create_buffer((ro + rhs.size()) * 4),
             o = poisoned(ctx(), 4 * p.k * p.n * 4);  // group 1 is empty: its zeros must be written
      l.upload(lhs.data(), lhs.size() * 4, lo * 4);
      r.upload(rhs.data(), rhs.size() * 4, ro * 4);
      tgmm(ctx(), p, {l.view(lo * 4, lhs.size() * 4), r.view(ro * 4, rhs.size() * 4), o.view(), {}});
      std::vector<float> got(4 * p.k * p.n);
      o.download(got.data(), got.size() * 4);
      EXPECT_TRUE(all_close(got, reference::tgmm(p, lhs, rhs), 1e-3, 1e-5)) << "lhs offset " << lo << ", rhs offset " << ro;
    }
}

}  // namespace
}  // namespace vkgmm::test
