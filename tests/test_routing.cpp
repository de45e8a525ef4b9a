// gmm routed by expert ids, and gmm's fused epilogue (bias, swiglu), on the device against
// vkgmm::reference: a sweep over token counts, top_k, expert windows, element types, layouts and both
// modes; shards stitched through existing_out; hostile ids on the device (skipped, counted in the status
// word, nothing outside the views touched); determinism of the combined mode; the decode combine fused
// into the kernel; the epilogue with group sizes; and the arguments refused before any GPU work.
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <ostream>

#include "context_impl.hpp"
#include "gpu_harness.hpp"
#include "interface.h"
#include "plan_internals.hpp"
#include "vkgmm/convert.hpp"

namespace vkgmm::test {
namespace {

// How the ids are made.
enum class Route {
  top_k,   // a top-k router over random logits: distinct experts per token, best first
  skewed,  // every token's slot j to the same expert (hot + j): one expert takes all T tokens
  dropped, // top_k with about a quarter of the slots -1 (capacity drops)
  uniform, // ids uniform in [-1, E): repeats within a token allowed
};

const char* route_name(Route r) {
  switch (r) {
    case Route::top_k: return "topk";
    case Route::skewed: return "skewed";
    case Route::dropped: return "dropped";
    case Route::uniform: return "uniform";
  }
  return "?";
}

// ids [T, top_k] over experts [0, E); `hot` is the skewed route's expert for slot 0.
std::vector<int32_t> make_ids(Route route, int64_t T, int64_t top_k, int64_t E, int64_t hot, std::mt19937& rng) {
  std::vector<int32_t> ids;
  std::vector<int32_t> experts(size_t(E), 0);
  for (int64_t t = 0; t < T; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng);  // the order of random logits
    for (int64_t j = 0; j < top_k; ++j) {
      int32_t id = experts[size_t(j % E)];
      if (route == Route::skewed) id = int32_t((hot + j) % E);
      if (route == Route::dropped && rng() % 4 == 0) id = -1;
      if (route == Route::uniform) id = int32_t(std::uniform_int_distribution<int64_t>(-1, E - 1)(rng));
      ids.push_back(id);
    }
  }
  return ids;
}

// Router weights: positive, summing to 1 over a token's slots (as after a softmax over the top k).
std::vector<float> make_weights(int64_t T, int64_t top_k, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(0.05f, 1.0f);
  std::vector<float> w(size_t(T * top_k));
  for (int64_t t = 0; t < T; ++t) {
    float sum = 0;
    for (int64_t j = 0; j < top_k; ++j) sum += (w[size_t(t * top_k + j)] = d(rng));
    for (int64_t j = 0; j < top_k; ++j) w[size_t(t * top_k + j)] /= sum;
  }
  return w;
}

struct RoutingCase {
  int64_t T, top_k, E, offset, e_local, k, n;
  Route route;
  DType lhs, rhs, out;
  bool transpose, lhs_per_slot, combine, existing_out, bias, swiglu;
  Schedule schedule;  // forced through the context (ContextOptions::schedule)
  uint32_t seed;
};

std::string case_name(const RoutingCase& c) {
  std::string s = "T" + std::to_string(c.T) + "k" + std::to_string(c.top_k) + "_E" + std::to_string(c.E) + "w" +
                  std::to_string(c.offset) + "l" + std::to_string(c.e_local) + "_K" + std::to_string(c.k) + "N" +
                  std::to_string(c.n) + "_" + route_name(c.route) + "_" + dtype_name(c.lhs) + dtype_name(c.rhs) +
                  dtype_name(c.out);
  if (c.transpose) s += "_T";
  if (c.lhs_per_slot) s += "_perslotlhs";
  s += c.combine ? "_combined" : "_perslot";
  if (c.existing_out) s += "_ex";
  if (c.bias) s += "_bias";
  if (c.swiglu) s += "_swiglu";
  return s + "_" + schedule_name(c.schedule);
}

// gtest prints a failing case's parameter with this (its name, not its bytes).
void PrintTo(const RoutingCase& c, std::ostream* os) { *os << case_name(c); }

// A case's problem and data (values exact in their types; weights and bias f32).
struct Routed {
  GmmProblem p;
  std::vector<float> lhs, rhs, weights, existing_out, bias;
  std::vector<int32_t> ids;
};

Routed make_routed(const RoutingCase& c) {
  std::mt19937 rng(c.seed);
  Routed r;
  GmmProblem& p = r.p;
  p.m = c.T;
  p.k = c.k;
  p.n = c.n;
  p.group_offset = c.offset;
  p.num_rhs_groups = c.e_local;
  p.transpose_rhs = c.transpose;
  p.lhs_type = c.lhs;
  p.rhs_type = c.rhs;
  p.out_type = c.out;
  p.existing_out = c.existing_out;
  p.routing = {c.top_k, c.lhs_per_slot, c.combine, c.E};
  p.epilogue = {c.bias, c.swiglu ? Activation::swiglu : Activation::none};
  r.ids = make_ids(c.route, c.T, c.top_k, c.E, c.offset + c.e_local / 2, rng);
  r.lhs = random_values(size_t(c.T * (c.lhs_per_slot ? c.top_k : 1) * c.k), c.lhs, rng);
  r.rhs = random_values(size_t(c.e_local * c.k * c.n), c.rhs, rng);
  if (c.combine) r.weights = make_weights(c.T, c.top_k, rng);
  if (c.existing_out) r.existing_out = random_values(gmm_out_elements(p), c.out, rng);
  if (c.bias) r.bias = random_values(size_t(c.e_local * c.n), DType::f32, rng);
  return r;
}

// Every third slot of r gets one of `bad` in turn; the copy returned has -1 in those slots (the clean run
// whose bits the hostile one must give).
Routed plant_bad_ids(Routed& r, const std::vector<int32_t>& bad) {
  Routed clean = r;
  for (size_t s = 0, i = 0; s < r.ids.size(); s += 3, ++i) {
    r.ids[s] = bad[i % bad.size()];
    clean.ids[s] = -1;
  }
  return clean;
}

std::vector<float> run(Context& ctx, const Routed& r, uint32_t expected_status = 0) {
  return run_gmm_routed(ctx, r.p, r.lhs, r.rhs, r.ids, r.weights, r.existing_out, r.bias, expected_status);
}

std::vector<float> want(const Routed& r) {
  return reference::gmm_routed(r.p, r.lhs, r.rhs, r.ids, r.weights, r.existing_out, r.bias);
}

::testing::AssertionResult close_to_reference(const Routed& r, const std::vector<float>& got) {
  const Tolerance tol = tolerance_for(r.p.lhs_type, r.p.rhs_type, r.p.out_type);
  return all_close(got, want(r), tol.atol, tol.rtol);
}

// The sweep: every axis cycles through all its values with its own pattern, chosen so that almost every
// pair of values of two axes meets in some case (all pairs of the flags, types and windows) without a
// full product.
std::vector<RoutingCase> sweep_cases() {
  const int64_t Ts[] = {1, 3, 8, 37, 130};
  const int64_t top_ks[] = {1, 2, 8};
  struct Window { int64_t E, offset, e_local; };
  const Window windows[] = {{8, 0, 8}, {8, 2, 3}, {16, 5, 7}, {12, 11, 1}};
  struct Shape { int64_t k, n; };
  const Shape shapes[] = {{16, 24}, {40, 74}, {64, 37}, {9, 130}, {128, 48}, {24, 8}, {33, 2}};
  const Route routes[] = {Route::top_k, Route::dropped, Route::skewed, Route::uniform};
  struct Types { DType lhs, rhs, out; };
  const Types types[] = {{DType::f32, DType::f32, DType::f32},   {DType::f16, DType::f16, DType::f16},
                         {DType::bf16, DType::bf16, DType::bf16}, {DType::bf16, DType::f32, DType::f32},
                         {DType::f32, DType::f16, DType::bf16},   {DType::f16, DType::bf16, DType::f32}};
  std::vector<RoutingCase> out;
  for (uint32_t i = 0; i < 36; ++i) {
    RoutingCase c{};
    c.T = Ts[i % 5];
    c.top_k = top_ks[i % 3];
    const Window& w = windows[i % 4];
    c.E = w.E, c.offset = w.offset, c.e_local = w.e_local;
    const Shape& s = shapes[i % 7];
    c.k = s.k, c.n = s.n;
    c.route = routes[(i / 4 + i) % 4];
    const Types& t = types[(i / 6) % 6];
    c.lhs = t.lhs, c.rhs = t.rhs, c.out = t.out;
    c.transpose = (i + i / 9) % 2 == 1;
    c.lhs_per_slot = (i / 2 + i / 3) % 2 == 1;
    c.combine = (i / 3 + i / 6) % 2 == 0;
    c.existing_out = (i / 5 + i / 4) % 2 == 1;
    c.bias = (i + i / 3) % 3 != 0;
    c.swiglu = s.n % 2 == 0 && (i / 7 + i) % 2 == 0;  // an odd product width cannot be split
    c.schedule = (i / 6 + i / 5) % 2 == 0 ? Schedule::shared : Schedule::direct;
    c.seed = 100 + i;
    out.push_back(c);
  }
  return out;
}

class RoutingSweep : public DeviceTest, public ::testing::WithParamInterface<RoutingCase> {};

TEST_P(RoutingSweep, MatchesReference) {
  const RoutingCase& c = GetParam();
  SCOPED_TRACE(case_name(c));
  const Routed r = make_routed(c);
  EXPECT_TRUE(close_to_reference(r, run(ctx(c.schedule), r)));
}

INSTANTIATE_TEST_SUITE_P(Sweep, RoutingSweep, ::testing::ValuesIn(sweep_cases()),
                         [](const ::testing::TestParamInfo<RoutingCase>& info) {
                           return case_name(info.param) + "_" + std::to_string(info.index);
                         });

// A moderately sized problem for the tests below: all 16 experts local, swiglu with bias.
RoutingCase base_case(bool combine, Schedule schedule) {
  return {40, 4, 16, 0, 16, 24, 2 * 19, Route::top_k, DType::f32, DType::f32, DType::f32,
          false, false, combine, false, true, true, schedule, 7};
}

// Experts [lo, hi) of a full problem: the window's rhs and bias rows, the same tiling and schedule as the
// full call (so that every slot is computed the same way: on a GPU a fixed tiling alone would take the
// shared schedule where a decode-sized full call takes the direct one), existing_out = the previous
// shard's out.
Routed shard(Context& ctx, const Routed& full, int64_t lo, int64_t hi, std::vector<float> existing_out) {
  Routed s = full;
  const GmmPlan whole(ctx, full.p);
  s.p.tiling = TilingChoice::of(whole.tiling());
  s.p.schedule = whole.schedule();
  s.p.group_offset = lo;
  s.p.num_rhs_groups = hi - lo;
  s.p.existing_out = !existing_out.empty();
  s.existing_out = std::move(existing_out);
  const size_t w = size_t(full.p.k * full.p.n), b = size_t(full.p.n);
  s.rhs.assign(full.rhs.begin() + std::ptrdiff_t(lo * w), full.rhs.begin() + std::ptrdiff_t(hi * w));
  if (full.p.epilogue.bias)
    s.bias.assign(full.bias.begin() + std::ptrdiff_t(lo * b), full.bias.begin() + std::ptrdiff_t(hi * b));
  return s;
}

// Expert parallelism: two calls over disjoint windows, the second taking the first's out as existing_out,
// equal one call over all experts. Per slot, each slot is written by exactly one shard: the same bits.
// Combined, the second shard adds its slots' sum to the first's, which changes the order of the fp32 sum
// (and rounds in between for 16-bit outs): close, not equal.
TEST_F(DeviceTest, RoutingShardsStitchThroughExistingOut) {
  for (bool combine : {false, true})
    for (Schedule schedule : {Schedule::shared, Schedule::direct}) {
      RoutingCase c = base_case(combine, schedule);
      c.route = Route::dropped;
      if (!combine) c.out = DType::bf16;  // a 16-bit existing_out passes through unchanged
      SCOPED_TRACE(case_name(c));
      Context& cx = ctx(schedule);
      const Routed full = make_routed(c);
      const std::vector<float> one = run(cx, full);
      const std::vector<float> first = run(cx, shard(cx, full, 0, 6, {}));
      const std::vector<float> both = run(cx, shard(cx, full, 6, 16, first));
      if (combine)
        EXPECT_TRUE(all_close(both, one, 1e-3, 1e-5));
      else
        EXPECT_TRUE(same_bits(both, one));
      EXPECT_TRUE(close_to_reference(full, one));
    }
}

// The combined mode sums per-slot fp32 results in slot order (no float atomics): two runs, the same bits,
// with skewed routing so that one expert's many slots are computed by many workgroups at once.
TEST_F(DeviceTest, RoutingCombinedIsDeterministic) {
  for (Schedule schedule : {Schedule::shared, Schedule::direct}) {
    RoutingCase c = base_case(true, schedule);
    c.T = 130, c.top_k = 8, c.route = Route::skewed, c.existing_out = true;
    SCOPED_TRACE(case_name(c));
    const Routed r = make_routed(c);
    const std::vector<float> a = run(ctx(schedule), r), b = run(ctx(schedule), r);
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_TRUE(close_to_reference(r, a));
  }
}

// Where plans compile every pipeline record() can bind (ContextOptions::eager_pipelines, GPUs' default), a
// routed plan compiles its build of another plan's routing too: listing it, as record() with a
// RoutingSource binds it, compiles nothing more.
TEST_F(DeviceTest, EagerRoutedPlanCompilesTheGivenRoutingBuild) {
  ContextOptions eager;
  eager.eager_pipelines = true;
  eager.schedule = Schedule::direct;
  eager.vec4_loads = false;  // fewer kernel variants to compile on a CPU device
  Context cx = make_context(eager);
  const RoutingCase c{3, 2, 4, 0, 4, 8, 12, Route::top_k, DType::f32, DType::f32, DType::f32,
                      false, false, true, false, false, false, Schedule::direct, 5};
  const Routed r = make_routed(c);
  const GmmPlan plan(cx, r.p);
  const size_t planned = ContextInternals::of(cx).pipelines.size();
  const std::vector<PlannedPipeline> pipelines = PlanInternals::pipelines(plan);
  ASSERT_EQ(pipelines.back().role, std::string("metadata given"));
  EXPECT_EQ(ContextInternals::of(cx).pipelines.size(), planned) << "listing the given-routing build compiled it";
}

// Decode-sized combined calls on the direct schedule sum their slots inside the gmm kernel (FUSED_COMBINE:
// the last workgroup of each n tile, no combine dispatch). Against the reference with: an expert chosen
// by every token (8 rows, more than one visit holds), -1 ids, a window with experts nobody chose and
// tokens with no local slot, existing_out and 16-bit outs, widths with and without 4-column groups;
// repeated runs give the same bits; every operand and the app's workspace between guard regions. The
// tiles are a CPU device's (a GPU gives decode visits 32-column tiles with K slices, test_gpu_decode.cpp):
// planned as a CPU device, so every device checks them and runs them.
TEST_F(DeviceTest, RoutingDecodeCombinesInTheKernel) {
  ContextOptions direct;
  direct.schedule = Schedule::direct;
  Context cx = cpu_planned_context(direct);
  struct Decode { Route route; int64_t E, offset, e_local, n; DType out; bool existing_out, epilogue; };
  // The last two: whole-row decode tiles that are not a power of two (768 columns; SwiGLU's 352 output
  // columns over 704 product ones, with bias), their 4-column stores into the per-slot results.
  const Decode cases[] = {
      {Route::skewed, 8, 0, 8, 96, DType::f32, false, false},  {Route::dropped, 8, 0, 8, 96, DType::f32, true, false},
      {Route::top_k, 16, 2, 5, 96, DType::bf16, true, false},  {Route::uniform, 8, 2, 3, 37, DType::f32, true, false},
      {Route::top_k, 8, 0, 8, 1024, DType::f32, false, false}, {Route::skewed, 8, 1, 6, 40, DType::f16, false, false},
      {Route::top_k, 8, 0, 8, 768, DType::f32, true, false},   {Route::skewed, 16, 3, 9, 704, DType::f32, false, true},
  };
  for (const Decode& d : cases) {
    RoutingCase c{8, 2, d.E, d.offset, d.e_local, 64, d.n, d.route, DType::f32, DType::f32, d.out,
                  false, false, true, d.existing_out, d.epilogue, d.epilogue, Schedule::direct, 31};
    SCOPED_TRACE(case_name(c));
    const Routed r = make_routed(c);
    const GmmPlan plan(cx, r.p);
    const std::vector<PlannedPipeline> pipelines = PlanInternals::pipelines(plan);
    ASSERT_EQ(pipelines.size(), 3u) << "the metadata build and the kernel, no combine, then the given-routing build";
    EXPECT_STREQ(pipelines[2].role, "metadata given");
    EXPECT_EQ(pipelines[1].constants[VKGMM_ID_GMM_FUSED_COMBINE], 1u);
    if (d.n == 768 || d.n == 704) {
      const int64_t tn = plan.tiling().tn;
      EXPECT_NE(tn & (tn - 1), 0) << "a whole-row tile of " << tn << " columns: not a power of two";
      EXPECT_EQ(pipelines[1].constants[VKGMM_ID_VEC4], 1u);
    }
    if (d.route == Route::skewed && d.offset == 0) {
      EXPECT_LT(plan.tiling().tm, 8) << "a visit holds fewer rows than the expert chosen by all 8 tokens";
    }

    const std::vector<float> a = run(cx, r), b = run(cx, r);
    EXPECT_TRUE(close_to_reference(r, a));
    EXPECT_TRUE(same_bits(a, b));

    if (d.out != DType::f32) continue;  // the guarded run reads its out back as f32
    Guarded l = guarded_floats(cx, r.lhs), w = guarded_floats(cx, r.rhs), wt = guarded_floats(cx, r.weights),
            o(cx, a.size() * 4), ids(cx, r.ids.size() * 4), status(cx, 4), work(cx, plan.workspace_bytes());
    ids.set(r.ids.data(), r.ids.size() * 4);
    GmmOperands ops{l.view(), w.view(), o.view()};
    std::optional<Guarded> e, bias;
    if (d.existing_out) ops.existing_out = e.emplace(guarded_floats(cx, r.existing_out)).view();
    if (d.epilogue) ops.bias = bias.emplace(guarded_floats(cx, r.bias)).view();
    ops.ids = ids.view();
    ops.weights = wt.view();
    ops.status = status.view();
    ops.workspace = work.view();
    // Twice on one workspace: the metadata build zeroes the tile counters the kernel counted up.
    for (int rep = 0; rep < 2; ++rep) {
      o.poison();
      cx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
      EXPECT_TRUE(same_bits(floats(o), a)) << "run " << rep;
    }
    for (const Guarded* g : {&l, &w, &wt, &o, &ids, &status, &work}) EXPECT_TRUE(g->guards_intact());
    if (e) EXPECT_TRUE(e->guards_intact());
    if (bias) EXPECT_TRUE(bias->guards_intact());
  }
}

// Routed calls with out at every element offset in a 16-byte unit: the vector stores (4 adjacent columns,
// where out's offset is a multiple of 4) and the element-by-element ones must write the same bits and
// nothing outside out, per slot and combined, with the fused epilogue or none, with slots of no local
// expert (filled from existing_out, or zero) and 16-bit outs, on both schedules.
TEST_F(DeviceTest, RoutedStoresAtEveryOutOffset) {
  struct Mode { bool combine, swiglu, existing_out; DType out; Schedule schedule; };
  const Mode modes[] = {
      {false, true, false, DType::f32, Schedule::direct},  {true, false, false, DType::f32, Schedule::direct},
      {true, false, true, DType::f32, Schedule::direct},   {false, false, true, DType::bf16, Schedule::direct},
      {true, true, true, DType::f16, Schedule::direct},    {false, true, false, DType::f16, Schedule::shared},
      {true, true, true, DType::bf16, Schedule::shared},   {true, false, true, DType::f32, Schedule::shared},
  };
  for (const Mode& m : modes) {
    RoutingCase c{8, 2, 8, 2, 4, 16, 64, Route::top_k, DType::f32, DType::f32, m.out,
                  false, false, m.combine, m.existing_out, m.swiglu, m.swiglu, m.schedule, 43};
    SCOPED_TRACE(case_name(c));
    Context& cx = ctx(m.schedule);
    const Routed r = make_routed(c);
    const GmmPlan plan(cx, r.p);
    // The aligned call stores 4 columns at a time (out_n 32): the offsets below take the other stores.
    bool vector_stores = false;
    for (const PlannedPipeline& pp : PlanInternals::pipelines(plan))
      if (std::string(pp.role) == "op") vector_stores = pp.constants[VKGMM_ID_GMM_VEC4_OUT] == 1u;
    EXPECT_TRUE(vector_stores);
    const std::vector<float> aligned = run(cx, r);
    ASSERT_TRUE(close_to_reference(r, aligned));
    const size_t es = dtype_size(m.out), count = aligned.size();
    auto operand = [&](DType t, const std::vector<float>& v) {
      Guarded g(cx, v.size() * dtype_size(t));
      const std::vector<uint8_t> bytes = encode(t, v);
      g.set(bytes.data(), bytes.size());
      return g;
    };
    Guarded l = operand(r.p.lhs_type, r.lhs), w = operand(r.p.rhs_type, r.rhs), ids(cx, r.ids.size() * 4);
    ids.set(r.ids.data(), r.ids.size() * 4);
    Guarded status(cx, 4);
    std::optional<Guarded> ex, wt, bias;
    GmmOperands ops{l.view(), w.view(), {}};
    ops.ids = ids.view();
    ops.status = status.view();
    if (r.p.existing_out) ops.existing_out = ex.emplace(operand(m.out, r.existing_out)).view();
    if (m.combine) ops.weights = wt.emplace(operand(DType::f32, r.weights)).view();
    if (m.swiglu) ops.bias = bias.emplace(operand(DType::f32, r.bias)).view();
    // Every element offset in a 16-byte unit; for 16-bit outs, 4 is a vector store at an address that is
    // not 16-byte aligned.
    for (size_t off = 1; off < 16 / es; ++off) {
      Guarded o(cx, (off + count) * es);  // out ends where the guard after it begins
      ops.out = o.buffer.view(Guarded::kGuard + off * es, count * es);
      cx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
      const std::vector<uint8_t> bytes = o.get();
      EXPECT_TRUE(same_bits(decode(m.out, bytes.data() + off * es, count), aligned)) << "out at element offset " << off;
      for (size_t b = 0; b < off * es; ++b)
        if (bytes[b] != Guarded::kPoison) {
          ADD_FAILURE() << "byte " << b << " before out written, offset " << off;
          break;
        }
      EXPECT_TRUE(o.guards_intact()) << "offset " << off;
    }
    const std::vector<uint8_t> word = status.get();
    EXPECT_EQ(word, std::vector<uint8_t>(4, 0)) << "the status word: every id keeps the contract";
    for (const Guarded* g : {&l, &w, &ids, &status}) EXPECT_TRUE(g->guards_intact());
    for (const std::optional<Guarded>* g : {&ex, &wt, &bias})
      if (*g) EXPECT_TRUE((*g)->guards_intact());
  }
}

// Ids that break the contract, which only the device sees: each is skipped like an id outside the window
// (the valid slots' results are the bits of a run with -1 in their place), the status word says bad_id
// when an id is below -1 or, with num_experts known, >= num_experts, and nothing outside the operands'
// views is written. Every operand sits between guard regions.
struct HostileCase {
  const char* name;
  int64_t num_experts;                // 0: unknown, so ids past the window are merely other shards'
  std::vector<int32_t> bad;           // ids written over some slots
  uint32_t status;                    // the status word expected
};

TEST_F(DeviceTest, RoutingHostileIdsAreSkippedAndReported) {
  const HostileCase hostile[] = {
      {"below_and_above", 16, {-2, 16, INT32_MAX, INT32_MIN, 1 << 20, -1000}, device_status::bad_id},
      {"above_unknown_E", 0, {16, INT32_MAX, 1 << 20}, 0},
      {"below_unknown_E", 0, {-2, INT32_MIN}, device_status::bad_id},
  };
  for (const HostileCase& h : hostile)
    for (bool combine : {false, true})
      for (Schedule schedule : {Schedule::shared, Schedule::direct}) {
        RoutingCase c = base_case(combine, schedule);
        c.existing_out = true;
        c.offset = 3, c.e_local = 9;
        SCOPED_TRACE(std::string(h.name) + " " + case_name(c));
        Context& cx = ctx(schedule);
        Routed r = make_routed(c);
        r.p.routing.num_experts = h.num_experts;
        // Every third slot gets a bad id; the same slots get -1 in the clean run.
        const Routed clean = plant_bad_ids(r, h.bad);
        const std::vector<float> want_bits = run(cx, clean);
        EXPECT_TRUE(close_to_reference(clean, want_bits));

        const GmmPlan plan(cx, r.p);
        ASSERT_GT(plan.workspace_bytes(), 0u) << "routing orders the slots in a workspace";
        Guarded l = guarded_floats(cx, r.lhs), w = guarded_floats(cx, r.rhs), e = guarded_floats(cx, r.existing_out),
                b = guarded_floats(cx, r.bias), o(cx, want_bits.size() * 4), ids(cx, r.ids.size() * 4),
                status(cx, 4), work(cx, plan.workspace_bytes());
        ids.set(r.ids.data(), r.ids.size() * 4);
        GmmOperands ops{l.view(), w.view(), o.view(), e.view()};
        ops.ids = ids.view();
        ops.bias = b.view();
        ops.status = status.view();
        ops.workspace = work.view();  // the app's (routing needs one: the per-slot results, the counts)
        std::optional<Guarded> weights;
        if (combine) ops.weights = weights.emplace(guarded_floats(cx, r.weights)).view();
        cx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });

        EXPECT_TRUE(same_bits(floats(o), want_bits));
        uint32_t word = ~0u;
        std::memcpy(&word, status.get().data(), 4);
        EXPECT_EQ(word, h.status);
        for (const Guarded* g : {&l, &w, &e, &b, &o, &ids, &status, &work}) EXPECT_TRUE(g->guards_intact());
        if (weights) EXPECT_TRUE(weights->guards_intact());
      }
}

// Contexts whose plans read a combined call's ids in the kernel where they can (the options' route_in_kernel,
// $VKGMM_ROUTE_IN_KERNEL=1) and take the routing build (the default).
struct BothPaths {
  Context in_kernel, built;
};
BothPaths both_paths(bool gpu) {
  BothPaths b{gpu ? gpu_planned_context() : DeviceTest::make_context({}),
              gpu ? gpu_planned_context() : DeviceTest::make_context({})};
  ContextInternals::of(b.in_kernel).dev.options.route_in_kernel = true;
  ContextInternals::of(b.built).dev.options.route_in_kernel = false;  // whatever $VKGMM_ROUTE_IN_KERNEL says
  return b;
}
// The direct schedule (the one that reads ids in the kernel) and, for the routing build's plan, the tiles
// the in-kernel plan took (`tiles`).
Routed on_direct(Routed r, std::optional<Tiling> tiles = std::nullopt) {
  r.p.schedule = Schedule::direct;
  if (tiles) r.p.tiling = TilingChoice::of(*tiles);
  return r;
}

// Where the options ask, a combined call of at most 64 slots reads its ids in the kernel (ROUTE_IN_KERNEL):
// one dispatch, no metadata build, no combine, no workspace. Its results are the routing build's path's
// bits with the same tiles, and the reference's values, planned as this device and as a GPU (K slices,
// 4-column groups): one token of top-8, 8 tokens of top-8 (the bound) among 128 experts, windows with ids
// outside them and -1, an expert every token chose, repeats within a token, existing_out, bias and SwiGLU,
// 16-bit operands, lhs per slot, both rhs layouts, widths and depths that are no multiple of 4.
TEST_F(DeviceTest, RouteInKernelGivesTheRoutingBuildsBits) {
  using R = Route;
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  const Schedule a = Schedule::automatic;
  const RoutingCase cases[] = {
      {1, 8, 16, 0, 16, 64, 96, R::top_k, f32, f32, f32, true, false, true, false, false, false, a, 51},
      {8, 8, 512, 2, 90, 40, 74, R::dropped, f32, f32, f32, true, false, true, true, true, true, a, 52},
      {3, 2, 48, 2, 30, 33, 74, R::uniform, f16, f16, f16, false, false, true, true, false, false, a, 53},
      {5, 4, 160, 0, 12, 48, 130, R::skewed, bf16, bf16, bf16, true, true, true, false, true, false, a, 54},
      {1, 8, 8, 1, 6, 64, 48, R::top_k, f32, f16, bf16, false, true, true, true, true, true, a, 55},
      {4, 4, 128, 0, 128, 24, 8, R::uniform, bf16, f32, f32, true, false, true, false, false, true, a, 56},
  };
  for (bool gpu : {false, true}) {
    BothPaths cx = both_paths(gpu);
    for (const RoutingCase& c : cases) {
      SCOPED_TRACE(std::string(gpu ? "planned as a GPU, " : "") + case_name(c));
      const Routed r = on_direct(make_routed(c));
      const GmmPlan in(cx.in_kernel, r.p);
      const Routed rb = on_direct(r, in.tiling());
      const GmmPlan built(cx.built, rb.p);
      const std::vector<PlannedPipeline> mine = PlanInternals::pipelines(in);
      ASSERT_EQ(mine.size(), 1u) << "one dispatch: no metadata build, no combine";
      EXPECT_STREQ(mine[0].role, "op");
      EXPECT_EQ(mine[0].constants[VKGMM_ID_GMM_ROUTE_IN_KERNEL], 1u);
      EXPECT_EQ(in.workspace_bytes(), 0u);
      EXPECT_EQ(in.tiling().tm, 1) << "each slot a visit of its own";
      const std::vector<PlannedPipeline> theirs = PlanInternals::pipelines(built);
      ASSERT_GE(theirs.size(), 2u);
      EXPECT_STREQ(theirs[0].role, "metadata");
      EXPECT_EQ(theirs[1].constants[VKGMM_ID_GMM_ROUTE_IN_KERNEL], 0u);
      EXPECT_EQ(theirs[1].constants[VKGMM_ID_GMM_K_SLICES], mine[0].constants[VKGMM_ID_GMM_K_SLICES]);
      EXPECT_EQ(built.tiling().tm, in.tiling().tm);
      EXPECT_EQ(built.tiling().tn, in.tiling().tn);
      const std::vector<float> got = run(cx.in_kernel, r), want_bits = run(cx.built, rb);
      EXPECT_TRUE(close_to_reference(r, got));
      EXPECT_TRUE(same_bits(got, want_bits));
    }
  }
}

// A call that reads its ids in the kernel, recorded twice back to back with no barrier between, each record
// into its own out and with no status view: every buffer of the app's but out is only read (the ids at a
// binding the module declares read-only; META and the missing status word at buffers the op writes anyway),
// so synchronization validation (the test's .sync run) finds no hazard between the two; both records give
// the reference's values, the same bits.
TEST_F(DeviceTest, RouteInKernelRecordsBackToBackReadingTheIdsOnly) {
  BothPaths cx = both_paths(false);
  const RoutingCase c{6, 2, 128, 0, 128, 40, 36, Route::uniform, DType::f32, DType::f32, DType::f32,
                      false, false, true, false, false, false, Schedule::automatic, 57};
  const Routed r = on_direct(make_routed(c));
  const GmmPlan plan(cx.in_kernel, r.p);
  ASSERT_EQ(PlanInternals::pipelines(plan).size(), 1u);
  ASSERT_EQ(PlanInternals::pipelines(plan)[0].constants[VKGMM_ID_GMM_ROUTE_IN_KERNEL], 1u);
  Context& ctx = cx.in_kernel;
  Buffer l = upload(ctx, r.p.lhs_type, r.lhs), w = upload(ctx, r.p.rhs_type, r.rhs);
  Buffer weights = upload(ctx, DType::f32, r.weights), ids = ctx.create_buffer(r.ids.size() * 4);
  ids.upload(r.ids.data(), r.ids.size() * 4);
  const size_t count = gmm_out_elements(r.p);
  Buffer first = poisoned(ctx, count * 4), second = poisoned(ctx, count * 4);
  GmmOperands ops{l.view(), w.view(), first.view()};
  ops.ids = ids.view();
  ops.weights = weights.view();
  GmmOperands again = ops;
  again.out = second.view();
  ctx.submit_and_wait([&](VkCommandBuffer cb) {
    plan.record(cb, ops);
    plan.record(cb, again);
  });
  const std::vector<float> a = download(first, DType::f32, count), b = download(second, DType::f32, count);
  EXPECT_TRUE(close_to_reference(r, a));
  EXPECT_TRUE(same_bits(a, b));
}

// Which calls read their ids in the kernel where the options ask: combined ones of 1 to 64 slots with no
// saved pre-activation, one token's or at most an eighth of the experts' (several tokens' slots may share
// experts, which the routing build's visits read once). Else, and by default, the routing build orders them.
TEST_F(DeviceTest, RouteInKernelTakesOnlyFewCombinedSlots) {
  BothPaths cx = both_paths(false);
  auto in_kernel = [&](Context& c, int64_t T, int64_t top_k, bool combine, bool save_pre, int64_t E = 512) {
    const Routed r = make_routed({T, top_k, E, 0, 8, 16, 24, Route::top_k, DType::f32, DType::f32, DType::f32, false,
                                  false, combine, false, false, false, Schedule::automatic, 57});
    GmmProblem p = r.p;
    p.epilogue.save_pre_activation = save_pre;
    const std::vector<PlannedPipeline> pipes = PlanInternals::pipelines(GmmPlan(c, p));
    for (const PlannedPipeline& x : pipes)
      if (std::string(x.role) == "op") return x.constants[VKGMM_ID_GMM_ROUTE_IN_KERNEL] == 1u;
    return false;
  };
  EXPECT_TRUE(in_kernel(cx.in_kernel, 1, 1, true, false));
  EXPECT_TRUE(in_kernel(cx.in_kernel, 8, 8, true, false));
  EXPECT_TRUE(in_kernel(cx.in_kernel, 1, 8, true, false, 8)) << "one token's slots, all the experts";
  EXPECT_FALSE(in_kernel(cx.in_kernel, 2, 8, true, false, 127)) << "16 slots, more than an eighth of 127 experts";
  EXPECT_FALSE(in_kernel(cx.in_kernel, 13, 5, true, false)) << "65 slots";
  EXPECT_FALSE(in_kernel(cx.in_kernel, 8, 8, false, false)) << "per slot";
  EXPECT_FALSE(in_kernel(cx.in_kernel, 8, 8, true, true)) << "the pre-activation saved in the workspace";
  EXPECT_FALSE(in_kernel(cx.built, 8, 8, true, false)) << "the option off";
}

// Near lavapipe's loop budget (65535 iterations an invocation, every loop together), the status word's read
// of the ids counts with the slots' K loops: a call that would pass it takes the routing build instead, so
// its K loops are never cut short. All ones in, so each output is exactly top_k * k, with a status view
// (the status loop runs only then).
TEST_F(DeviceTest, RouteInKernelStaysWithinTheLoopBudget) {
  if (ctx().info().type != VK_PHYSICAL_DEVICE_TYPE_CPU)
    GTEST_SKIP() << "the loop budget (65535 iterations per invocation) is a CPU driver's, checked on CPU devices only";
  BothPaths cx = both_paths(false);
  for (int64_t k : {8189, 8188, 8100}) {
    SCOPED_TRACE("k " + std::to_string(k));
    Routed r = make_routed({1, 8, 512, 0, 64, k, 8, Route::uniform, DType::f32, DType::f32, DType::f32, false,
                            false, true, false, false, false, Schedule::automatic, 59});
    for (int64_t s = 0; s < 8; ++s) r.ids[s] = int32_t(s * 7);  // eight local experts
    std::fill(r.lhs.begin(), r.lhs.end(), 1.f);
    std::fill(r.rhs.begin(), r.rhs.end(), 1.f);
    std::fill(r.weights.begin(), r.weights.end(), 1.f);
    const std::vector<float> got = run_gmm_routed(cx.in_kernel, r.p, r.lhs, r.rhs, r.ids, r.weights);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], float(8 * k)) << "column " << i;
  }
}

// Read in the kernel, ids that break the contract are skipped as the routing build skips them (the bits of
// a run with -1 in their place) and the status word, which the kernel writes over whatever it held, says
// bad_id where the routing build's would. Every operand between guard regions; twice, the same bits; a
// workspace given all the same (this plan has none) left as it was.
TEST_F(DeviceTest, RouteInKernelSkipsHostileIdsAndWritesTheStatus) {
  const HostileCase hostile[] = {
      {"below_and_above", 16, {-2, 16, INT32_MAX, INT32_MIN, 1 << 20, -1000}, device_status::bad_id},
      {"above_unknown_E", 0, {16, INT32_MAX, 1 << 20}, 0},
      {"below_unknown_E", 0, {-2, INT32_MIN}, device_status::bad_id},
      {"none", 16, {-1}, 0},
  };
  for (bool gpu : {false, true}) {
    BothPaths cx = both_paths(gpu);
    for (const HostileCase& h : hostile) {
      // One token's 8 slots: the in-kernel path whatever the experts.
      RoutingCase c{1, 8, 16, 3, 9, 40, 38, Route::uniform, DType::f32, DType::f32, DType::f32,
                    true, false, true, true, true, true, Schedule::automatic, 58};
      SCOPED_TRACE(std::string(gpu ? "planned as a GPU, " : "") + h.name);
      Routed r = on_direct(make_routed(c));
      r.p.routing.num_experts = h.num_experts;
      const Routed clean = plant_bad_ids(r, h.bad);
      const GmmPlan plan(cx.in_kernel, r.p);
      ASSERT_EQ(plan.workspace_bytes(), 0u);
      ASSERT_EQ(PlanInternals::pipelines(plan)[0].constants[VKGMM_ID_GMM_ROUTE_IN_KERNEL], 1u);
      const std::vector<float> want_bits = run(cx.built, on_direct(clean, plan.tiling()));
      EXPECT_TRUE(close_to_reference(clean, want_bits));

      Context& x = cx.in_kernel;
      Guarded l = guarded_floats(x, r.lhs), w = guarded_floats(x, r.rhs), e = guarded_floats(x, r.existing_out),
              b = guarded_floats(x, r.bias), wt = guarded_floats(x, r.weights), o(x, want_bits.size() * 4),
              ids(x, r.ids.size() * 4), status(x, 4);
      ids.set(r.ids.data(), r.ids.size() * 4);
      GmmOperands ops{l.view(), w.view(), o.view(), e.view()};
      ops.ids = ids.view(), ops.weights = wt.view(), ops.bias = b.view(), ops.status = status.view();
      for (int rep = 0; rep < 2; ++rep) {
        const uint32_t stale = 0xdeadbeefu;
        status.set(&stale, 4);
        o.poison();
        x.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
        EXPECT_TRUE(same_bits(floats(o), want_bits)) << "run " << rep;
        uint32_t word = ~0u;
        std::memcpy(&word, status.get().data(), 4);
        EXPECT_EQ(word, h.status) << "run " << rep;
      }
      for (const Guarded* g : {&l, &w, &e, &b, &wt, &o, &ids, &status}) EXPECT_TRUE(g->guards_intact());
      // A workspace, as an app routing every call with one gives it, is left alone.
      Guarded work(x, 64);
      const std::vector<uint8_t> before = work.get();
      ops.workspace = work.view();
      o.poison();
      x.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
      EXPECT_TRUE(same_bits(floats(o), want_bits));
      EXPECT_EQ(work.get(), before);
    }
  }
}

// A routed plan's run with every operand (and the app's workspace, where the plan takes one) between guard
// regions, each of them expected intact: out (f32) and the status word.
struct GuardedRouted {
  std::vector<float> out;
  uint32_t status = ~0u;
};
GuardedRouted run_guarded(Context& cx, const GmmPlan& plan, const Routed& r) {
  Guarded l = guarded_floats(cx, r.lhs), w = guarded_floats(cx, r.rhs), o(cx, gmm_out_elements(r.p) * 4),
          ids(cx, r.ids.size() * 4), status(cx, 4);
  ids.set(r.ids.data(), r.ids.size() * 4);
  GmmOperands ops{l.view(), w.view(), o.view()};
  ops.ids = ids.view(), ops.status = status.view();
  std::optional<Guarded> e, b, wt, work;
  if (r.p.existing_out) ops.existing_out = e.emplace(guarded_floats(cx, r.existing_out)).view();
  if (r.p.epilogue.bias) ops.bias = b.emplace(guarded_floats(cx, r.bias)).view();
  if (r.p.routing.combine) ops.weights = wt.emplace(guarded_floats(cx, r.weights)).view();
  if (plan.workspace_bytes()) ops.workspace = work.emplace(cx, plan.workspace_bytes()).view();
  cx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  for (const Guarded* g : {&l, &w, &o, &ids, &status}) EXPECT_TRUE(g->guards_intact());
  for (const std::optional<Guarded>* g : {&e, &b, &wt, &work})
    if (*g) EXPECT_TRUE((*g)->guards_intact());
  GuardedRouted run{floats(o), 0};
  std::memcpy(&run.status, status.get().data(), 4);
  return run;
}

// Every element the same bits, but a NaN matches any NaN (its payload is the device's choice).
::testing::AssertionResult same_bits_or_nan(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " != " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isnan(got[i]) != std::isnan(want[i]) || (!std::isnan(want[i]) && std::memcmp(&got[i], &want[i], 4)))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

// NaN, +-inf and huge routing weights, which the router's caller may pass as they come: the combined
// result is each token's sum, in slot order, of weight * the slot's result (the device's own per-slot
// bits, from a per-slot run of the same tiles), + existing_out, in fp32 - NaN and inf where that sum gives
// them, and the weights of slots the call skips (-1, outside the window) never read into it. On every
// combine path: the separate combine pass, the one fused into the kernel (decode on the direct schedule)
// and the ids read in the kernel; every operand between guard regions, the status word clean.
TEST_F(DeviceTest, RoutingCombinesNonFiniteWeights) {
  ContextOptions direct;
  direct.schedule = Schedule::direct;
  Context fused = cpu_planned_context(direct);
  BothPaths in_kernel = both_paths(false);
  struct Path { const char* name; Context* cx; RoutingCase c; };
  const DType f32 = DType::f32;
  const Path paths[] = {
      {"combine pass", &ctx(Schedule::shared), {20, 3, 16, 2, 9, 24, 38, Route::top_k, f32, f32, f32,
                                                false, false, true, true, true, true, Schedule::shared, 61}},
      {"fused combine", &fused, {8, 3, 8, 2, 5, 64, 40, Route::top_k, f32, f32, f32,
                                 false, false, true, true, false, false, Schedule::direct, 62}},
      {"ids in the kernel", &in_kernel.in_kernel, {5, 3, 128, 0, 120, 24, 38, Route::uniform, f32, f32, f32,
                                                   true, false, true, true, true, true, Schedule::direct, 63}},
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const Path& path : paths) {
    SCOPED_TRACE(std::string(path.name) + " " + case_name(path.c));
    Context& cx = *path.cx;
    Routed r = make_routed(path.c);
    r.p.schedule = path.c.schedule;
    const int32_t first = int32_t(path.c.offset);
    for (int64_t t = 0; t < path.c.T; ++t) {
      int32_t* id = &r.ids[size_t(t * path.c.top_k)];
      float* w = &r.weights[size_t(t * path.c.top_k)];
      switch (t % 5) {
        case 0: id[1] = -1, w[1] = nan, w[0] = inf, id[0] = first + int32_t(path.c.e_local); break;  // skipped
        case 1: id[0] = first, w[0] = nan; break;
        case 2: id[0] = first, w[0] = inf, id[1] = first + 1, w[1] = 3e38f; break;
        case 3: id[0] = first, w[0] = -inf, id[1] = first + 1, w[1] = inf; break;  // inf - inf
        default:  // finite weights, every slot local: the sum's order shows in its bits
          for (int32_t j = 0; j < int32_t(path.c.top_k); ++j) id[j] = first + j;
      }
    }
    const GmmPlan plan(cx, r.p);
    bool fused_combine = false, combine_pass = false, ids_in_kernel = false;
    for (const PlannedPipeline& pp : PlanInternals::pipelines(plan)) {
      combine_pass |= std::string(pp.role) == "combine";
      if (std::string(pp.role) != "op") continue;
      fused_combine |= pp.constants[VKGMM_ID_GMM_FUSED_COMBINE] == 1u;
      ids_in_kernel |= pp.constants[VKGMM_ID_GMM_ROUTE_IN_KERNEL] == 1u;
    }
    EXPECT_EQ(combine_pass, &path == &paths[0]);
    EXPECT_EQ(fused_combine, &path == &paths[1]);
    EXPECT_EQ(ids_in_kernel, &path == &paths[2]);

    // Each slot's result as the combined plan computes it: a per-slot run of its tiles and schedule.
    Routed per_slot = r;
    per_slot.p.routing.combine = false, per_slot.p.existing_out = false;
    per_slot.p.tiling = TilingChoice::of(plan.tiling()), per_slot.p.schedule = plan.schedule();
    per_slot.weights.clear(), per_slot.existing_out.clear();
    const std::vector<float> slot_results = run(cx, per_slot);
    EXPECT_TRUE(close_to_reference(per_slot, slot_results)) << "the per-slot results the sums are made of";
    const int64_t n_out = reference::out_columns(r.p), top_k = path.c.top_k;
    std::vector<float> want(size_t(path.c.T * n_out));
    for (int64_t t = 0; t < path.c.T; ++t)
      for (int64_t col = 0; col < n_out; ++col) {
        float sum = 0.0f;
        for (int64_t s = t * top_k; s < (t + 1) * top_k; ++s) {
          const int32_t id = r.ids[size_t(s)];
          if (id < first || id >= first + path.c.e_local) continue;
          // Rounded before it is added, as the device's per-slot results are: no fused multiply-add.
          volatile float weighted = r.weights[size_t(s)] * slot_results[size_t(s * n_out + col)];
          sum += weighted;
        }
        want[size_t(t * n_out + col)] = sum + r.existing_out[size_t(t * n_out + col)];
      }
    size_t nans = 0, infs = 0;
    for (float v : want) nans += std::isnan(v), infs += std::isinf(v);
    EXPECT_GT(nans, 0u);
    EXPECT_GT(infs, 0u);
    for (int64_t col = 0; col < n_out; ++col)
      ASSERT_TRUE(std::isfinite(want[size_t(col)])) << "token 0's non-finite weights are its skipped slots'";

    const GuardedRouted got = run_guarded(cx, plan, r);
    EXPECT_TRUE(same_bits_or_nan(got.out, want));
    EXPECT_EQ(got.status, 0u);
  }
}

// Routing planned as a GPU's, more slots than the build's invocations and few enough local experts that
// their counts sit in shared memory (ROUTE_SHARED_COUNTS): ids that break the contract are skipped as
// elsewhere (the bits of a run with -1 in their place), the status word says bad_id where one is below -1
// or, with num_experts known, past it, and nothing outside the views is written.
TEST_F(DeviceTest, RoutingHostileIdsWithSharedCountsAsAGpu) {
  const HostileCase hostile[] = {
      {"below_and_above", 16, {-2, 16, INT32_MAX, INT32_MIN, 1 << 20, -1000}, device_status::bad_id},
      {"above_unknown_E", 0, {16, INT32_MAX, 1 << 20}, 0},
  };
  Context cx = gpu_planned_context();
  ContextInternals::of(cx).dev.options.route_in_kernel = false;  // the build, whatever $VKGMM_ROUTE_IN_KERNEL says
  for (const HostileCase& h : hostile) {
    const bool combine = &h == &hostile[0];  // one case each: the build the ids meet is the same
    RoutingCase c = base_case(combine, Schedule::automatic);
    c.T = 12, c.top_k = 3, c.offset = 3, c.e_local = 9, c.existing_out = true;
    SCOPED_TRACE(std::string(h.name) + " " + case_name(c));
    Routed r = make_routed(c);
    r.p.routing.num_experts = h.num_experts;
    ASSERT_GT(c.T * c.top_k, VKGMM_METADATA_INVOCATIONS) << "more slots than invocations: they are counted";
    const uint64_t words = uint64_t(VKGMM_METADATA_INVOCATIONS) * uint64_t(c.e_local + 1);
    if ((words + 1) * 4 + 1024 > cx.info().max_shared_memory) GTEST_SKIP() << "the counts do not fit in shared memory";
    const GmmPlan plan(cx, r.p);
    uint32_t shared_words = 0;
    for (const PlannedPipeline& pp : PlanInternals::pipelines(plan))
      if (std::string(pp.role) == "metadata") shared_words = pp.constants[VKGMM_ID_META_ROUTE_SHARED_COUNTS];
    EXPECT_EQ(shared_words, words);
    const Routed clean = plant_bad_ids(r, h.bad);
    const std::vector<float> want_bits = run(cx, clean);
    EXPECT_TRUE(close_to_reference(clean, want_bits));
    const GuardedRouted got = run_guarded(cx, plan, r);
    EXPECT_TRUE(same_bits(got.out, want_bits));
    EXPECT_EQ(got.status, h.status);
  }
}

// A routed plan given another plan's routing of the same slots (PlanInternals::record_routed_from: the MoE
// layer's down projection, the routed backward's passes) copies that order instead of building its own:
// the bits and the status word of its own build, windowed, with bad ids, per slot and combined (the
// weights gathered in the given order). A given routing rewritten before the copy (an app's workspace)
// keeps every row inside its views and is reported.
TEST_F(DeviceTest, RoutingGivenByAnotherPlanGivesItsOwnBits) {
  for (bool combine : {false, true})
    for (Schedule schedule : {Schedule::shared, Schedule::direct}) {
      RoutingCase c = base_case(combine, schedule);
      c.existing_out = true;
      c.offset = 3, c.e_local = 9;
      SCOPED_TRACE(case_name(c));
      Context& cx = ctx(schedule);
      Routed r = make_routed(c);
      for (size_t s = 0; s < r.ids.size(); s += 5) r.ids[s] = (s / 5) % 2 ? -1 : 99;  // 99 >= E: flagged
      const std::vector<float> own = run(cx, r, device_status::bad_id);
      EXPECT_TRUE(close_to_reference(r, own));

      // The source: another problem of the same slots (its own k and n, per slot, no epilogue).
      GmmProblem sp = r.p;
      sp.k = 8, sp.n = 12, sp.existing_out = false, sp.epilogue = {};
      sp.routing.combine = false, sp.routing.lhs_per_slot = false;
      const GmmPlan source(cx, sp);
      const GmmPlan plan(cx, r.p);
      std::mt19937 rng(3);
      Guarded sl = guarded_floats(cx, random_values(size_t(sp.m * sp.k), DType::f32, rng));
      Guarded sw = guarded_floats(cx, random_values(size_t(sp.num_rhs_groups * sp.k * sp.n), DType::f32, rng));
      Guarded so(cx, gmm_out_elements(sp) * 4), swork(cx, source.workspace_bytes());
      Guarded l = guarded_floats(cx, r.lhs), w = guarded_floats(cx, r.rhs), e = guarded_floats(cx, r.existing_out),
              b = guarded_floats(cx, r.bias), o(cx, own.size() * 4), ids(cx, r.ids.size() * 4), status(cx, 4),
              work(cx, plan.workspace_bytes());
      ids.set(r.ids.data(), r.ids.size() * 4);
      GmmOperands sops{sl.view(), sw.view(), so.view()};
      sops.ids = ids.view(), sops.workspace = swork.view();
      GmmOperands ops{l.view(), w.view(), o.view(), e.view()};
      ops.ids = ids.view(), ops.bias = b.view(), ops.status = status.view(), ops.workspace = work.view();
      std::optional<Guarded> weights;
      if (combine) ops.weights = weights.emplace(guarded_floats(cx, r.weights)).view();
      const RoutingSource given = PlanInternals::routing_source(source, swork.view());
      auto read_status = [&] {
        uint32_t word = ~0u;
        std::memcpy(&word, status.get().data(), 4);
        return word;
      };
      cx.submit_and_wait([&](VkCommandBuffer cb) {
        source.record(cb, sops);
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
        PlanInternals::record_routed_from(plan, cb, ops, given);
      });
      EXPECT_TRUE(same_bits(floats(o), own));
      EXPECT_EQ(read_status(), device_status::bad_id);

      // The source's words rewritten (every word INT32_MAX): counts past the slots, a map of no slot.
      const std::vector<int32_t> junk(size_t(source.workspace_bytes() / 4), INT32_MAX);
      swork.set(junk.data(), junk.size() * 4);
      cx.submit_and_wait([&](VkCommandBuffer cb) { PlanInternals::record_routed_from(plan, cb, ops, given); });
      EXPECT_NE(read_status() & device_status::bad_routing, 0u);
      for (const Guarded* g : {&sl, &sw, &so, &swork, &l, &w, &e, &b, &o, &ids, &status, &work})
        EXPECT_TRUE(g->guards_intact());
      if (weights) EXPECT_TRUE(weights->guards_intact());
    }
}

// --- the epilogue with group sizes -----------------------------------------------------------------------

struct EpilogueCase {
  bool bias;
  Activation act;
  bool transpose, existing_out, device_sizes;
  DType lhs, rhs, out;
  Schedule schedule;
};

std::string epilogue_name(const EpilogueCase& c) {
  return std::string(c.bias ? "bias" : "nobias") + (gated(c.act) ? std::string("_") + activation_name(c.act) : "") +
         (c.transpose ? "_T" : "") +
         (c.existing_out ? "_ex" : "") + (c.device_sizes ? "_devsizes" : "") + "_" + dtype_name(c.lhs) +
         dtype_name(c.rhs) + dtype_name(c.out) + "_" + schedule_name(c.schedule);
}

void PrintTo(const EpilogueCase& c, std::ostream* os) { *os << epilogue_name(c); }

class EpilogueSweep : public DeviceTest, public ::testing::WithParamInterface<EpilogueCase> {};

// gmm with group sizes and bias / swiglu against the reference; with device group sizes too, which must
// give the host path's bits.
TEST_P(EpilogueSweep, MatchesReference) {
  const EpilogueCase& c = GetParam();
  SCOPED_TRACE(epilogue_name(c));
  std::mt19937 rng(uint32_t(c.bias + 2 * uint32_t(c.act) + 8 * c.transpose + 16 * c.existing_out));
  GmmProblem p;
  p.m = 70;
  p.k = 24;
  p.n = 2 * 37;  // n_out = 37 with a gated activation
  p.group_sizes = make_group_sizes(Sizes::split_tiles, 6, p.m, rng);
  p.group_offset = 1;
  p.num_rhs_groups = 4;
  p.transpose_rhs = c.transpose;
  p.lhs_type = c.lhs, p.rhs_type = c.rhs, p.out_type = c.out;
  p.existing_out = c.existing_out;
  p.epilogue = {c.bias, c.act};
  const auto lhs = random_values(size_t(p.m * p.k), c.lhs, rng);
  const auto rhs = random_values(size_t(4 * p.k * p.n), c.rhs, rng);
  const auto bias = c.bias ? random_values(size_t(4 * p.n), DType::f32, rng) : std::vector<float>{};
  const auto ex = c.existing_out ? random_values(gmm_out_elements(p), c.out, rng) : std::vector<float>{};
  Context& cx = ctx(c.schedule);
  const std::vector<float> got = run_gmm(cx, p, lhs, rhs, ex, bias);
  const Tolerance tol = tolerance_for(c.lhs, c.rhs, c.out);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs, ex, bias), tol.atol, tol.rtol));
  if (c.device_sizes) EXPECT_TRUE(same_bits(run_gmm_device(cx, p, lhs, rhs, ex, bias), got)) << "device group sizes";
}

// The gated activations where they bend: products and biases reaching past +-7 (swiglu_oai's clamps,
// GeGLU's and SiLU's tails), with bias, on both schedules and on a context planning as a GPU (the decode
// schedule's K slices), against the reference.
TEST_F(DeviceTest, GatedActivationsPastTheirBends) {
  Context gpu = make_context({});
  ContextInternals::of(gpu).tiling_device.as = discrete_gpu_like(gpu.info(), 512, 16, 32);
  for (Context* cx : {&ctx(Schedule::shared), &ctx(Schedule::direct), &gpu})
    for (Activation act : {Activation::swiglu, Activation::swiglu_oai, Activation::geglu}) {
      SCOPED_TRACE(std::string(activation_name(act)) + (cx == &gpu ? " as a GPU" : ""));
      std::mt19937 rng(51 + uint32_t(act));
      GmmProblem p;
      p.m = 9, p.k = 8, p.n = 2 * 20;
      p.group_sizes = {4, 5};
      p.epilogue = {true, act};
      auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
      for (float& x : lhs) x *= 4.0f;  // products of about +-4 sqrt(8) / sqrt(3): past 7 often
      const auto rhs = random_values(size_t(2 * p.k * p.n), DType::f32, rng);
      auto bias = random_values(size_t(2 * p.n), DType::f32, rng);
      for (float& x : bias) x *= 4.0f;
      const auto want = reference::gmm(p, lhs, rhs, {}, bias);
      GmmProblem pre = p;  // the [gate | up] values the activation reads
      pre.epilogue.activation = Activation::none;
      size_t past = 0;
      for (float v : reference::gmm(pre, lhs, rhs, {}, bias)) past += std::abs(v) > 7.0f;
      EXPECT_GT(past, 4u) << "too few values past the bends";
      EXPECT_TRUE(all_close(run_gmm(*cx, p, lhs, rhs, {}, bias), want, 1e-3, 1e-5));
    }
}

std::vector<EpilogueCase> epilogue_cases() {
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  const Activation none = Activation::none, swiglu = Activation::swiglu, oai = Activation::swiglu_oai,
                   geglu = Activation::geglu;
  return {
      {true, none, false, false, true, f32, f32, f32, Schedule::shared},
      {false, swiglu, false, true, false, f32, f32, f32, Schedule::direct},
      {true, swiglu, true, false, true, f32, f32, f32, Schedule::shared},
      {true, swiglu, false, true, true, bf16, bf16, bf16, Schedule::direct},
      {true, swiglu, true, true, false, f16, f16, f16, Schedule::direct},
      {false, swiglu, true, false, true, f16, bf16, f32, Schedule::shared},
      {true, none, true, true, true, f32, f16, bf16, Schedule::direct},
      {true, swiglu, false, false, false, bf16, f32, f16, Schedule::shared},
      {true, oai, false, true, true, f32, f32, f32, Schedule::direct},
      {false, oai, true, false, false, bf16, bf16, bf16, Schedule::shared},
      {true, geglu, true, false, true, f32, f32, f32, Schedule::shared},
      {false, geglu, false, true, false, f16, f16, f16, Schedule::direct},
  };
}

INSTANTIATE_TEST_SUITE_P(Sweep, EpilogueSweep, ::testing::ValuesIn(epilogue_cases()),
                         [](const ::testing::TestParamInfo<EpilogueCase>& info) {
                           return epilogue_name(info.param) + "_" + std::to_string(info.index);
                         });

// --- errors ----------------------------------------------------------------------------------------------

GmmProblem good_routed() {
  GmmProblem p;
  p.m = 16;
  p.k = 8;
  p.n = 8;
  p.num_rhs_groups = 4;
  p.routing.top_k = 2;
  return p;
}

// The problem's rules, refused when the plan is made.
TEST_F(DeviceTest, RoutingPlanErrorsNameTheArgument) {
  auto refused = [&](const std::function<void(GmmProblem&)>& edit, const std::string& needle) {
    GmmProblem p = good_routed();
    edit(p);
    SCOPED_TRACE(needle);
    expect_invalid_argument([&] { GmmPlan(ctx(), p); }, needle);
  };
  refused([](GmmProblem& p) { p.group_sizes = {8, 8, 0, 0}; }, "group_sizes");
  refused([](GmmProblem& p) { p.num_rhs_groups = -1; }, "num_rhs_groups");
  refused([](GmmProblem& p) { p.routing.top_k = -1; }, "top_k");
  refused([](GmmProblem& p) { p.routing.num_experts = 3; }, "num_experts");
  refused([](GmmProblem& p) { p.group_offset = 2, p.routing.num_experts = 5; }, "num_experts");
  refused([](GmmProblem& p) { p.n = 7, p.epilogue.activation = Activation::swiglu; }, "swiglu");
  refused([](GmmProblem& p) { p.epilogue.activation = static_cast<Activation>(7); }, "activation");
  // The epilogue's rules hold with group sizes too.
  refused([](GmmProblem& p) {
    p.routing = {};
    p.group_sizes = {8, 8, 0, 0};
    p.n = 9, p.epilogue.activation = Activation::swiglu;
  }, "swiglu");
  // Routing's switches mean nothing without routing.
  refused([](GmmProblem& p) { p.routing = {0, false, true, 0}, p.group_sizes = {8, 8, 0, 0}; }, "routing.combine");
  refused([](GmmProblem& p) { p.routing = {0, true, false, 0}, p.group_sizes = {8, 8, 0, 0}; }, "routing.lhs_per_slot");
}

// Each operand is taken exactly where the problem says (the operand table's `when`): a view the plan does
// not take is refused, naming it and why; one it needs is asked for. Each plan first passes with its own
// views, so every refusal below is the one change's.
TEST_F(DeviceTest, GmmTakesEachOperandExactlyWhereTheProblemSaysSo) {
  Context& c = ctx();
  std::vector<Buffer> held;
  auto view = [&](VkDeviceSize bytes) {
    held.push_back(c.create_buffer(std::max<VkDeviceSize>(bytes, 4)));
    held.back().upload(std::vector<uint8_t>(held.back().size(), 0).data(), held.back().size());
    return held.back().view(0, bytes);
  };
  auto operands = [&](const GmmPlan& plan) {
    const GmmProblem& p = plan.problem();
    GmmOperands ops;
    ops.lhs = view(plan.sizes().lhs), ops.rhs = view(plan.sizes().rhs), ops.out = view(plan.sizes().out);
    const VkDeviceSize slots = VkDeviceSize(p.m) * VkDeviceSize(std::max<int64_t>(p.routing.top_k, 1));
    if (p.routing.top_k) ops.ids = view(slots * 4);
    if (p.routing.combine) ops.weights = view(slots * 4);
    if (p.device_group_sizes.count && !p.routing.top_k) ops.group_sizes = view(p.device_group_sizes.count * 4);
    if (p.epilogue.bias) ops.bias = view(VkDeviceSize(p.num_rhs_groups ? p.num_rhs_groups : 2) * p.n * 4);
    if (p.existing_out) ops.existing_out = ops.out;
    return ops;
  };
  auto refused = [&](const GmmPlan& plan, const GmmOperands& good, const std::function<void(GmmOperands&)>& edit,
                     const std::string& message) {
    SCOPED_TRACE(message);
    GmmOperands ops = good;
    edit(ops);
    expect_invalid_argument([&] { plan.check(ops); }, "gmm: " + message);
  };
  const BufferView extra = view(64);

  // Group sizes on the host, no routing, no epilogue: none of the optional views.
  GmmProblem host;
  host.m = 16, host.k = 8, host.n = 8, host.group_sizes = {6, 10};
  const GmmPlan host_plan(c, host);
  const GmmOperands h = operands(host_plan);
  host_plan.check(h);
  const std::string on_host = "a view was given but the problem's group sizes are on the host";
  refused(host_plan, h, [&](GmmOperands& o) { o.group_sizes = extra; }, "group_sizes: " + on_host);
  refused(host_plan, h, [&](GmmOperands& o) { o.workspace = extra; },
          "workspace: a view was given but the plan needs none (workspace_bytes() is 0: the group sizes are on the host "
          "and no group's reduction is split)");
  refused(host_plan, h, [&](GmmOperands& o) { o.status = extra; }, "status: " + on_host);
  const std::string unrouted = "a view was given but the problem is not routed (Routing::top_k is 0)";
  refused(host_plan, h, [&](GmmOperands& o) { o.ids = extra; }, "ids: " + unrouted);
  refused(host_plan, h, [&](GmmOperands& o) { o.weights = extra; }, "weights: " + unrouted);
  refused(host_plan, h, [&](GmmOperands& o) { o.bias = extra; },
          "bias: a view was given but the problem has no bias (Epilogue::bias)");
  refused(host_plan, h, [&](GmmOperands& o) { o.existing_out = o.out; },
          "existing_out: a view was given but the problem has existing_out = false");

  // Group sizes on the device, with existing_out.
  GmmProblem device = host;
  device.group_sizes = {}, device.device_group_sizes.count = 2, device.existing_out = true;
  const GmmPlan device_plan(c, device);
  const GmmOperands d = operands(device_plan);
  device_plan.check(d);
  refused(device_plan, d, [&](GmmOperands& o) { o.group_sizes = {}; },
          "group_sizes: the problem's group sizes are on the device but no view was given");
  refused(device_plan, d, [&](GmmOperands& o) { o.existing_out = {}; },
          "existing_out: the problem has existing_out but no view was given");

  // Routed by ids, each slot's result written, with a bias.
  GmmProblem routed = good_routed();
  routed.epilogue.bias = true;
  const GmmPlan routed_plan(c, routed);
  const GmmOperands r = operands(routed_plan);
  routed_plan.check(r);
  refused(routed_plan, r, [&](GmmOperands& o) { o.ids = {}; }, "ids: the problem is routed but no view was given");
  refused(routed_plan, r, [&](GmmOperands& o) { o.weights = extra; },
          "weights: a view was given but the problem writes every slot's result (Routing::combine is off)");
  refused(routed_plan, r, [&](GmmOperands& o) { o.bias = {}; },
          "bias: the problem has a bias (Epilogue::bias) but no view was given");
  refused(routed_plan, r, [&](GmmOperands& o) { o.group_sizes = extra; },
          "group_sizes: a view was given but the problem is routed by expert ids (the ids give the groups)");
  // With no tokens nothing reads the bias: its view may stay null.
  GmmProblem no_tokens = routed;
  no_tokens.m = 0;
  const GmmPlan empty_plan(c, no_tokens);
  GmmOperands e = operands(empty_plan);
  e.bias = {};
  empty_plan.check(e);

  // Routed, combining each token's slots.
  GmmProblem combined = good_routed();
  combined.routing.combine = true;
  const GmmPlan combined_plan(c, combined);
  const GmmOperands w = operands(combined_plan);
  combined_plan.check(w);
  refused(combined_plan, w, [&](GmmOperands& o) { o.weights = {}; },
          "weights: the problem combines the slots (Routing::combine) but no view was given");
}

// A routed or fused forward has no backward in vkgmm: refused, not differentiated as another function.
// The edges of routing: more local experts than the routing build has invocations (each takes a chunk of
// the experts' counts), no local expert at all (every slot filled), and no tokens (nothing to compute,
// the status word still written), in both modes.
TEST_F(DeviceTest, RoutingEdges) {
  struct Edge {
    const char* name;
    int64_t T, top_k, E, offset, e_local;
  };
  for (const Edge e : {Edge{"many_experts", 9, 8, 128, 0, 128}, Edge{"many_experts_window", 21, 6, 100, 37, 45},
                       Edge{"no_local_expert", 11, 2, 8, 3, 0}, Edge{"no_tokens", 0, 4, 8, 0, 8},
                       Edge{"one_token_one_slot", 1, 1, 1, 0, 1}})
    for (bool combine : {false, true})
      for (Schedule schedule : {Schedule::shared, Schedule::direct}) {
        RoutingCase c = base_case(combine, schedule);
        c.T = e.T, c.top_k = e.top_k, c.E = e.E, c.offset = e.offset, c.e_local = e.e_local;
        c.existing_out = true;
        c.k = 12, c.n = 10;
        SCOPED_TRACE(std::string(e.name) + " " + case_name(c));
        const Routed r = make_routed(c);
        EXPECT_TRUE(close_to_reference(r, run(ctx(schedule), r)));
      }
}

// The operands' rules, refused by check() (and so by record()) before anything is recorded.
TEST_F(DeviceTest, RoutingOperandErrorsNameTheArgument) {
  struct Variant {
    bool combine, bias;
  };
  for (const Variant v : {Variant{false, false}, Variant{true, true}}) {
    GmmProblem p = good_routed();
    p.routing.combine = v.combine;
    p.epilogue.bias = v.bias;
    SCOPED_TRACE(std::string(v.combine ? "combined" : "per slot") + (v.bias ? " bias" : ""));
    const GmmPlan plan(ctx(), p);
    Buffer lhs = ctx().create_buffer(16 * 8 * 4), rhs = ctx().create_buffer(4 * 8 * 8 * 4),
           out = ctx().create_buffer(16 * 2 * 8 * 4), ids = ctx().create_buffer(16 * 2 * 4),
           weights = ctx().create_buffer(16 * 2 * 4), bias = ctx().create_buffer(4 * 8 * 4);
    GmmOperands good{lhs.view(), rhs.view(), out.view()};
    good.ids = ids.view();
    if (v.combine) good.weights = weights.view();
    if (v.bias) good.bias = bias.view();
    auto refused = [&](const std::function<void(GmmOperands&)>& edit, const std::string& needle) {
      GmmOperands ops = good;
      edit(ops);
      SCOPED_TRACE(needle);
      expect_invalid_argument([&] { plan.check(ops); }, needle);
    };
    refused([](GmmOperands& o) { o.ids = {}; }, "ids");
    refused([&](GmmOperands& o) { o.ids = ids.view(0, 16 * 2 * 4 - 4); }, "ids: view of");
    if (v.combine) {
      refused([](GmmOperands& o) { o.weights = {}; }, "weights");
      refused([&](GmmOperands& o) { o.weights = weights.view(0, 8); }, "weights: view of");
    } else {
      refused([&](GmmOperands& o) { o.weights = weights.view(); }, "weights");
    }
    if (v.bias) {
      refused([](GmmOperands& o) { o.bias = {}; }, "bias");
      refused([&](GmmOperands& o) { o.bias = bias.view(0, 4 * 8 * 4 - 4); }, "bias: view of");
    } else {
      refused([&](GmmOperands& o) { o.bias = bias.view(); }, "bias");
    }
    plan.check(good);  // and the good operands pass
  }
  // ids on a problem routed by group sizes.
  GmmProblem grouped = good_routed();
  grouped.routing = {};
  grouped.group_sizes = {8, 8, 0, 0};
  const GmmPlan plan(ctx(), grouped);
  Buffer b = ctx().create_buffer(4096);
  GmmOperands ops{b.view(0, 512), b.view(512, 1024), b.view(1536, 512)};
  plan.check(ops);
  ops.ids = b.view(2048, 128);
  expect_invalid_argument([&] { plan.check(ops); }, "ids");
}

}  // namespace
}  // namespace vkgmm::test
