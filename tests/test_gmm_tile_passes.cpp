// gmm's tile heights per group (host/gmm_tile_heights.hpp), planned on lavapipe as for a discrete GPU of
// one compute unit (tiling_device.hpp: a CPU device takes one height, and a grid of many waves is where the
// passes pay) and run there: skewed groups' whole tiles in one pass of the kernel, their remainders in
// passes of smaller tiles. Each case checks that the plan took several heights and the result against the
// reference. The same with the sizes on the device, and routed, below.
#include <cstring>
#include <set>
#include <string>

#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"

namespace vkgmm::test {
namespace {

// Two long groups among short and empty ones: whole 128-row tiles, and remainders of 3 to 104 rows.
const std::vector<int32_t> kSkewed = {1000, 20, 5, 0, 260, 17, 9, 700, 3};

int64_t total_rows(const std::vector<int32_t>& sizes) {
  int64_t m = 0;
  for (int32_t s : sizes) m += s;
  return m;
}

// The heights of the plan's passes (its op pipelines' block rows), in dispatch order.
std::vector<uint32_t> pass_heights(const GmmPlan& plan) {
  std::vector<uint32_t> rows;
  for (const PlannedPipeline& p : PlanInternals::pipelines(plan))
    if (std::string(p.role) == "op") {
      EXPECT_EQ(p.pass, rows.size());
      rows.push_back(p.constants[VKGMM_ID_BLOCK_ROWS]);
    }
  return rows;
}

// Planned as a discrete GPU with one compute unit: these small problems are then several waves.
Context one_unit_gpu_context(ContextOptions options = {}) { return gpu_planned_context(options, 1); }

GmmProblem skewed_problem(int64_t k, int64_t n) {
  GmmProblem p;
  p.group_sizes = kSkewed;
  p.m = total_rows(kSkewed);
  p.k = k;
  p.n = n;
  return p;
}

struct Data {
  std::vector<float> lhs, rhs, ex, bias;
};

Data draw(const GmmProblem& p, int64_t groups, uint32_t seed) {
  std::mt19937 rng(seed);
  Data d;
  d.lhs = random_values(size_t(p.m) * p.k, p.lhs_type, rng);
  d.rhs = random_values(size_t(groups) * p.k * p.n, p.rhs_type, rng);
  if (p.existing_out) d.ex = random_values(size_t(p.m) * reference::out_columns(p), p.out_type, rng);
  if (p.epilogue.bias) d.bias = random_values(size_t(groups) * p.n, DType::f32, rng);
  return d;
}

// Expects the plan to take several heights, largest first, and the reference's result.
void expect_passes_match(Context& c, const GmmProblem& p, uint32_t seed) {
  const std::vector<uint32_t> heights = pass_heights(GmmPlan(c, p));
  ASSERT_GE(heights.size(), 2u) << "the plan took one tile height";
  EXPECT_EQ(std::set<uint32_t>(heights.begin(), heights.end()).size(), heights.size());
  for (size_t i = 1; i < heights.size(); ++i) EXPECT_LT(heights[i], heights[i - 1]);
  const int64_t G = int64_t(p.group_sizes.size());
  const Data d = draw(p, p.num_rhs_groups > 0 ? p.num_rhs_groups : G - p.group_offset, seed);
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  const std::vector<float> want = reference::gmm(p, d.lhs, d.rhs, d.ex, d.bias);
  EXPECT_TRUE(all_close(run_gmm(c, p, d.lhs, d.rhs, d.ex, d.bias), want, tol.atol * 4, tol.rtol));
}

// Both rhs layouts, the inputs read through texel views (vkgmm's buffers on lavapipe) and as storage
// buffers (what a GPU reads).
TEST(GmmTilePasses, BothRhsLayoutsAndLoads) {
  for (bool texel : {true, false}) {
    ContextOptions o;
    o.texel_loads = texel;
    Context c = one_unit_gpu_context(o);
    for (bool transpose : {false, true}) {
      SCOPED_TRACE(std::string(transpose ? "rhs [n, k]" : "rhs [k, n]") + (texel ? ", texel views" : ", storage"));
      GmmProblem p = skewed_problem(40, 36);
      p.transpose_rhs = transpose;
      expect_passes_match(c, p, 21);
    }
  }
}

// The cases both paths run: existing_out and 16-bit types; a bias and a gated activation; windows of the
// groups with rows past them (the fill visits, in the first pass); the persistent grid; three n tiles.
struct PassCase {
  std::string name;
  GmmProblem p;
  uint32_t seed;
};

std::vector<PassCase> epilogue_window_grid_cases() {
  std::vector<PassCase> cases;
  GmmProblem p = skewed_problem(24, 20);
  p.lhs_type = p.rhs_type = p.out_type = DType::bf16;
  p.existing_out = true;
  cases.push_back({"existing_out, bf16", p, 22});
  p = skewed_problem(16, 48);
  p.epilogue.bias = true;
  p.epilogue.activation = Activation::swiglu;
  cases.push_back({"bias and SwiGLU", p, 23});
  p = skewed_problem(20, 12);
  p.m += 37;
  p.num_rhs_groups = 6;
  cases.push_back({"a window: groups 0 .. 5 of rows past them", p, 24});
  p = skewed_problem(12, 16);
  p.group_offset = 1, p.num_rhs_groups = 7;
  p.existing_out = true;
  cases.push_back({"a window from group 1, existing_out", p, 25});
  p = skewed_problem(20, 16);
  p.grid = Grid::persistent;
  cases.push_back({"the persistent grid", p, 26});
  p = skewed_problem(8, 300);
  cases.push_back({"three n tiles", p, 27});
  p.grid = Grid::persistent;
  cases.push_back({"three n tiles, persistent", p, 28});
  return cases;
}

TEST(GmmTilePasses, EpiloguesWindowsAndGrids) {
  Context c = one_unit_gpu_context();
  for (const PassCase& k : epilogue_window_grid_cases()) {
    SCOPED_TRACE(k.name);
    expect_passes_match(c, k.p, k.seed);
  }
}

// Every pass binds the operands at their views' offsets: lhs, rhs and out in one buffer at offsets that are
// not multiples of 4 elements (the scalar variants) and that are, the bytes around out left as they were.
TEST(GmmTilePasses, ViewsAtOffsets) {
  Context c = one_unit_gpu_context();
  for (size_t lo : {3, 4}) {
    SCOPED_TRACE("lhs at element " + std::to_string(lo));
    GmmProblem p = skewed_problem(8, 140);
    ASSERT_GE(pass_heights(GmmPlan(c, p)).size(), 2u);
    std::mt19937 rng(29);
    const int64_t G = int64_t(p.group_sizes.size());
    const std::vector<float> lhs = random_values(size_t(p.m) * p.k, p.lhs_type, rng);
    const std::vector<float> rhs = random_values(size_t(G) * p.k * p.n, p.rhs_type, rng);
    // lo = 4: every operand at a multiple of 4 elements; lo = 3: none.
    const size_t out_count = size_t(p.m) * p.n, rb = lo + lhs.size() + lo + 4, ob = rb + rhs.size() + (lo % 4 ? 5 : 4);
    std::vector<float> all(ob + out_count + 7, 0.5f);
    std::copy(lhs.begin(), lhs.end(), all.begin() + lo);
    std::copy(rhs.begin(), rhs.end(), all.begin() + rb);
    Buffer b = c.create_buffer(all.size() * 4);
    b.upload(all.data(), all.size() * 4);
    gmm(c, p, {b.view(lo * 4, lhs.size() * 4), b.view(rb * 4, rhs.size() * 4), b.view(ob * 4, out_count * 4), {}});
    std::vector<float> got(all.size());
    b.download(got.data(), got.size() * 4);
    const std::vector<float> out(got.begin() + ob, got.begin() + ob + out_count);
    EXPECT_TRUE(all_close(out, reference::gmm(p, lhs, rhs), 1e-3, 1e-5));
    for (size_t i = 0; i < all.size(); ++i)
      if (i < ob || i >= ob + out_count) ASSERT_EQ(got[i], all[i]) << "element " << i << " outside out";
  }
}

// A tiling the caller fixed, groups alike in rows, or a grid of one wave (on 64 compute units 64-row tiles
// alone run at once, where the passes wait on their 128-row tiles) keep one height; so does a CPU device's.
TEST(GmmTilePasses, OneHeightWhereTheyDoNotPay) {
  Context gpu = one_unit_gpu_context();
  GmmProblem fixed = skewed_problem(16, 16);
  fixed.tiling = TilingChoice::of({64, 16, 64});
  EXPECT_EQ(pass_heights(GmmPlan(gpu, fixed)).size(), 1u);
  GmmProblem alike = skewed_problem(16, 16);
  alike.group_sizes = std::vector<int32_t>(8, 256);
  alike.m = 2048;
  EXPECT_EQ(pass_heights(GmmPlan(gpu, alike)).size(), 1u);
  Context wide = gpu_planned_context(ContextOptions{}, 64);
  EXPECT_EQ(pass_heights(GmmPlan(wide, skewed_problem(16, 16))).size(), 1u);
  Context cpu = cpu_planned_context();
  EXPECT_EQ(pass_heights(GmmPlan(cpu, skewed_problem(16, 16))).size(), 1u);
}

// With the group sizes on the device (and routed calls), the plan takes the passes from its estimate of
// the sizes (VKGMM_ID_META_HEIGHTS), and the metadata build divides each group's rows among them by the
// same rule on the sizes it finds: on the indirect, upper-bound and persistent grids, several heights, the
// reference's values and the host path's bits (which takes its own heights, from the sizes themselves).
// Sizes that break the contract are divided as the sizes taken and touch nothing outside the views.

// p with its sizes moved to the device, the automatic tiling estimating groups of `expected_rows` (groups
// of a whole tile and a few rows: a remainder that a smaller height covers for less).
GmmProblem on_device(GmmProblem p, int64_t expected_rows = 130) {
  p.device_group_sizes.count = int64_t(p.group_sizes.size());
  p.device_group_sizes.expected_rows = expected_rows;
  p.group_sizes.clear();
  return p;
}

// The device-sized plan of `host` (its sizes in a buffer) run on `grid`: out, its status word clean.
std::vector<float> run_device(Context& c, const GmmProblem& host, const GmmProblem& dev, const Data& d) {
  const GmmPlan plan(c, dev);
  Buffer l = upload(c, host.lhs_type, d.lhs), r = upload(c, host.rhs_type, d.rhs);
  Buffer sizes = c.create_buffer(host.group_sizes.size() * 4), status = status_word(c);
  sizes.upload(host.group_sizes.data(), host.group_sizes.size() * 4);
  const size_t out_count = size_t(host.m) * reference::out_columns(host);
  Buffer o = poisoned(c, out_count * dtype_size(host.out_type)), e, b;
  GmmOperands ops{l.view(), r.view(), o.view()};
  ops.group_sizes = sizes.view();
  ops.status = status.view();
  if (host.existing_out) ops.existing_out = (e = upload(c, host.out_type, d.ex)).view();
  if (host.epilogue.bias) ops.bias = (b = upload(c, DType::f32, d.bias)).view();
  c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  expect_clean_status(status);
  return download(o, host.out_type, out_count);
}

// On each grid: several heights, largest first; the reference's values; the host path's bits.
void expect_device_heights(Context& c, const GmmProblem& host, uint32_t seed, int64_t expected_rows = 130) {
  const GmmProblem dev = on_device(host, expected_rows);
  const int64_t G = int64_t(host.group_sizes.size());
  const int64_t groups = host.num_rhs_groups > 0 ? host.num_rhs_groups : G - host.group_offset;
  const Data d = draw(host, groups, seed);
  const std::vector<float> want = reference::gmm(host, d.lhs, d.rhs, d.ex, d.bias);
  const std::vector<float> host_bits = run_gmm(c, host, d.lhs, d.rhs, d.ex, d.bias);
  const Tolerance tol = tolerance_for(host.lhs_type, host.rhs_type, host.out_type);
  for (DeviceGrid grid : {DeviceGrid::indirect, DeviceGrid::upper_bound}) {
    SCOPED_TRACE(grid == DeviceGrid::indirect ? "indirect grid" : "upper-bound grid");
    const GridHook hook(c, grid);
    const std::vector<uint32_t> heights = pass_heights(GmmPlan(c, dev));
    ASSERT_GE(heights.size(), 2u) << "the device-sized plan took one tile height";
    for (size_t i = 1; i < heights.size(); ++i) EXPECT_LT(heights[i], heights[i - 1]);
    const std::vector<float> got = run_device(c, host, dev, d);
    EXPECT_TRUE(all_close(got, want, tol.atol * 4, tol.rtol));
    EXPECT_TRUE(same_bits(got, host_bits)) << "the host path's bits";
  }
}

// Both rhs layouts, the cases the host path runs, groups of whole tiles only and no active rows.
TEST(GmmTilePasses, DeviceSizesTheHostPathsValuesAndBits) {
  Context c = one_unit_gpu_context();
  for (bool transpose : {false, true}) {
    SCOPED_TRACE(transpose ? "rhs [n, k]" : "rhs [k, n]");
    GmmProblem p = skewed_problem(40, 36);
    p.transpose_rhs = transpose;
    expect_device_heights(c, p, 31);
  }
  for (const PassCase& k : epilogue_window_grid_cases()) {
    SCOPED_TRACE(k.name);
    expect_device_heights(c, k.p, k.seed + 10);
  }
  GmmProblem p = skewed_problem(8, 16);
  p.group_sizes = {256, 0, 128, 384};
  p.m = 768;
  expect_device_heights(c, p, 38);
  p.group_sizes = {0, 0, 0};
  p.m = 40;
  expect_device_heights(c, p, 39);
  // No rows at all: nothing to dispatch, the build still writes the status word.
  p.m = 0;
  const Data d = draw(p, 3, 40);
  EXPECT_TRUE(run_device(c, p, on_device(p), d).empty());
}

// The build's lists, read back from an app workspace on the indirect and persistent grids (each list
// packed, its count after its command): each active group's whole tiles of the first pass's height in the
// first pass, its remainder in the pass whose visits cost least (the height plus the build's VISIT_OVERHEAD
// rows each, ties to the larger), as host/gmm_tile_heights.cpp divides a group's rows. 100 groups (several
// per lane of the build) in a window of 90 from group 3, rows past them: of random sizes, and of one size
// whose remainder takes the most tiles any later pass takes of a group, in every group.
TEST(GmmTilePasses, DeviceSizesDivideTheRowsByTheHostRule) {
  Context c = one_unit_gpu_context();
  const GridHook hook(c, DeviceGrid::indirect);
  std::mt19937 rng(50);
  for (int trial = 0; trial < 5; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    GmmProblem p = skewed_problem(4, 8);
    p.group_sizes.assign(100, 0);
    for (int32_t& size : p.group_sizes) size = rng() % 5 == 0 ? 0 : int32_t(rng() % 400);
    p.m = total_rows(p.group_sizes) + 21;
    p.group_offset = 3, p.num_rhs_groups = 90;
    if (trial == 3) p.grid = Grid::persistent;
    const GmmPlan first(c, on_device(p));
    const std::vector<uint32_t> heights = pass_heights(first);
    ASSERT_GE(heights.size(), 2u);
    uint32_t overhead = 0;
    for (const PlannedPipeline& pp : PlanInternals::pipelines(first))
      if (std::string(pp.role) == "metadata") overhead = pp.constants[VKGMM_ID_META_VISIT_OVERHEAD];
    ASSERT_GT(overhead, 0u);
    auto cost = [&](int64_t rows, int64_t h) { return (rows + h - 1) / h * (h + int64_t(overhead)); };
    // The pass a remainder of `rest` rows goes to (0: the first, in one tile of its height).
    auto pass_of = [&](int64_t rest) {
      size_t best = 0;
      for (size_t i = 1; rest > 0 && i < heights.size(); ++i)
        if (cost(rest, heights[i]) < cost(rest, heights[best])) best = i;
      return best;
    };
    const int64_t H = heights[0];
    int64_t most_tiles = 0;
    if (trial == 4) {
      int64_t rest = 1;
      for (int64_t r = 1; r < H; ++r) {
        const size_t pass = pass_of(r);
        const int64_t tiles = pass ? (r + heights[pass] - 1) / heights[pass] : 0;
        if (tiles > most_tiles) most_tiles = tiles, rest = r;
      }
      ASSERT_GT(most_tiles, 0);
      p.group_sizes.assign(100, int32_t(H + rest));
      p.m = total_rows(p.group_sizes) + 21;
      ASSERT_EQ(pass_heights(GmmPlan(c, on_device(p))), heights);
    }
    const GmmPlan plan(c, on_device(p));
    const std::vector<PlanInternals::VisitList> lists = PlanInternals::visit_lists(plan);
    ASSERT_EQ(lists.size(), heights.size());

    // What each pass should visit: (group, first row), groups in order.
    std::vector<std::vector<std::pair<int32_t, int32_t>>> want(heights.size());
    int64_t start = 0;
    for (int64_t g = 0; g < int64_t(p.group_sizes.size()); ++g) {
      const int64_t size = p.group_sizes[size_t(g)];
      const bool active = g >= p.group_offset && g < p.group_offset + p.num_rhs_groups;
      const int64_t whole = size / H * H;
      const size_t best = pass_of(size - whole);
      for (int64_t r = 0; active && r < (best == 0 ? size : whole); r += H) want[0].push_back({int32_t(g), int32_t(start + r)});
      for (int64_t r = whole; active && best > 0 && r < size; r += heights[best])
        want[best].push_back({int32_t(g), int32_t(start + r)});
      start += size;
    }

    const Data d = draw(p, p.num_rhs_groups, 51);
    Buffer l = upload(c, p.lhs_type, d.lhs), r = upload(c, p.rhs_type, d.rhs);
    Buffer sizes = c.create_buffer(p.group_sizes.size() * 4), status = status_word(c);
    sizes.upload(p.group_sizes.data(), p.group_sizes.size() * 4);
    Buffer o = poisoned(c, size_t(p.m) * p.n * 4), work = c.create_buffer(plan.workspace_bytes());
    c.submit_and_wait([&](VkCommandBuffer cb) {
      plan.record(cb, {l.view(), r.view(), o.view(), {}, sizes.view(), work.view(), status.view()});
    });
    expect_clean_status(status);
    std::vector<int32_t> words(plan.workspace_bytes() / 4);
    work.download(words.data(), words.size() * 4);
    for (size_t i = 0; i < lists.size(); ++i) {
      SCOPED_TRACE("pass " + std::to_string(i) + " of " + std::to_string(heights[i]) + " rows");
      const uint32_t at = lists[i].offset, V = lists[i].slots, R = uint32_t(words.at(at + 2 * V + 3));
      ASSERT_LE(R, V);
      std::vector<std::pair<int32_t, int32_t>> got;
      for (uint32_t v = 0; v < R; ++v)
        if (words[at + v] >= 0) got.push_back({words[at + v], words[at + V + v]});
      EXPECT_EQ(got, want[i]);
    }
    EXPECT_TRUE(all_close(download(o, p.out_type, size_t(p.m) * p.n), reference::gmm(p, d.lhs, d.rhs), 1e-4, 1e-5));
  }
}

// Groups alike near a whole tile keep one height: the estimate's remainders take no smaller tile.
TEST(GmmTilePasses, DeviceSizesOneHeightWhereTheEstimateSaysSo) {
  Context c = one_unit_gpu_context();
  EXPECT_EQ(pass_heights(GmmPlan(c, on_device(skewed_problem(16, 16), 256))).size(), 1u);
  Context cpu = cpu_planned_context();
  EXPECT_EQ(pass_heights(GmmPlan(cpu, on_device(skewed_problem(16, 16)))).size(), 1u);
  GmmProblem fixed = on_device(skewed_problem(16, 16));
  fixed.tiling = TilingChoice::of({64, 16, 64});
  EXPECT_EQ(pass_heights(GmmPlan(c, fixed)).size(), 1u);
}

// Routed by ids, the routing build's counts are the sizes: 540 tokens of top-2 over 8 experts (the estimate:
// about 270 slots per expert carrying them, a few rows past whole tiles), most of them on a few experts,
// combined with weights.
TEST(GmmTilePasses, DeviceSizesRoutedSlots) {
  Context c = one_unit_gpu_context();
  GmmProblem p;
  p.m = 540, p.k = 16, p.n = 24;
  p.routing.top_k = 2;
  p.routing.num_experts = 8;
  p.routing.combine = true;
  p.num_rhs_groups = 8;
  ASSERT_GE(pass_heights(GmmPlan(c, p)).size(), 2u) << "the routed plan took one tile height";
  std::mt19937 rng(40);
  std::vector<int32_t> ids(size_t(p.m) * 2);
  for (size_t t = 0; t < size_t(p.m); ++t) {
    // Expert 0 for three tokens of four, 3 for a third, the rest spread: 405 slots, 180 and a few dozen each.
    ids[2 * t] = t % 4 == 3 ? int32_t(t % 7) + 1 : 0;
    ids[2 * t + 1] = t % 3 == 0 ? 3 : int32_t(4 + t % 4);
  }
  const auto lhs = random_values(size_t(p.m) * p.k, p.lhs_type, rng);
  const auto rhs = random_values(size_t(8) * p.k * p.n, p.rhs_type, rng);
  const auto weights = random_values(ids.size(), DType::f32, rng);
  const std::vector<float> got = run_gmm_routed(c, p, lhs, rhs, ids, weights);
  EXPECT_TRUE(all_close(got, reference::gmm_routed(p, lhs, rhs, ids, weights), 1e-3, 1e-5));
  EXPECT_TRUE(same_bits(run_gmm_routed(c, p, lhs, rhs, ids, weights), got)) << "a second run";
}

// Negative sizes, sizes past m and sums past m, divided as taken, inside guard regions, with the status word.
TEST(GmmTilePasses, DeviceSizesHostileStayInsideTheViews) {
  const std::vector<std::vector<int32_t>> hostile = {
      {-5, 300, 140, 2000}, {INT32_MIN, INT32_MAX, 7, 131}, {200, -1, 200, 200}, {130, 129, 0, 500}};
  Context c = one_unit_gpu_context();
  for (DeviceGrid grid : {DeviceGrid::indirect, DeviceGrid::upper_bound})
    for (const std::vector<int32_t>& sizes : hostile) {
      SCOPED_TRACE(std::to_string(sizes[0]) + ", " + std::to_string(sizes[1]) + ", ...");
      const GridHook hook(c, grid);
      GmmProblem host = skewed_problem(12, 20);
      host.m = 600;
      host.existing_out = true;
      uint32_t want_status = 0;
      host.group_sizes = sizes_taken(sizes, host.m, want_status);
      const Data d = draw(host, 4, 41);
      const std::vector<float> want = run_gmm(c, host, d.lhs, d.rhs, d.ex);
      GmmProblem dev = on_device(host);
      GmmPlan plan(c, dev);
      ASSERT_GE(pass_heights(plan).size(), 2u);
      Guarded l = guarded_floats(c, d.lhs), r = guarded_floats(c, d.rhs), e = guarded_floats(c, d.ex);
      Guarded o(c, want.size() * 4), s(c, 16), status(c, 4), work(c, plan.workspace_bytes());
      s.set(sizes.data(), 16);
      c.submit_and_wait([&](VkCommandBuffer cb) {
        plan.record(cb, {l.view(), r.view(), o.view(), e.view(), s.view(), work.view(), status.view()});
      });
      EXPECT_TRUE(same_bits(floats(o), want));
      uint32_t got_status = 0;
      std::memcpy(&got_status, status.get().data(), 4);
      EXPECT_EQ(got_status, want_status);
      for (const Guarded* g : {&l, &r, &e, &o, &s, &status, &work}) EXPECT_TRUE(g->guards_intact());
    }
}

}  // namespace
}  // namespace vkgmm::test
