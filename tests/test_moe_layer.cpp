// MoeLayerPlan: the layer's forward against a float64 forward written here from its definition, and every
// gradient against central differences of that forward's <d_y, y> (the top-k choice held fixed: the
// test's logits have no near ties); shards of the experts that add up to the whole layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "context_impl.hpp"
#include "gpu_harness.hpp"
#include "moe_reference.hpp"
#include "vkgmm/moe_layer.hpp"

namespace vkgmm::test {
namespace {

struct DeviceLayer {
  std::vector<float> y, d_x, d_router_w, d_w_up, d_b_up, d_w_down, d_b_down;
};

std::vector<float> as_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// The plan's forward and backward in one submit; `start` holds y's, d_x's and d_router_w's starting values
// with accumulate. give_workspace: a workspace of the test's own (else the plan's).
DeviceLayer run_layer(Context& ctx, const MoeLayerProblem& p, const MoeWeights& w, const std::vector<float>& d_y,
                      const DeviceLayer* start = nullptr, bool give_workspace = false) {
  const MoeLayerPlan plan(ctx, p);
  const MoeLayerSizes s = plan.sizes();
  auto up = [&](const std::vector<double>& v) { return upload(ctx, DType::f32, as_float(v)); };
  auto out = [&](const std::vector<float>* from, VkDeviceSize bytes) {
    return from ? upload(ctx, DType::f32, *from) : poisoned(ctx, bytes);
  };
  Buffer x = up(w.x), rw = up(w.router_w), wu = up(w.w_up), wd = up(w.w_down), dy = upload(ctx, DType::f32, d_y);
  Buffer bu, bd, dbu, dbd;
  Buffer y = out(start ? &start->y : nullptr, s.y), dx = out(start ? &start->d_x : nullptr, s.x);
  Buffer drw = out(start ? &start->d_router_w : nullptr, s.router_w);
  Buffer dwu = poisoned(ctx, s.w_up), dwd = poisoned(ctx, s.w_down), status = status_word(ctx);
  MoeLayerOperands ops;
  ops.x = x.view(), ops.router_w = rw.view(), ops.w_up = wu.view(), ops.w_down = wd.view(), ops.y = y.view(0, s.y);
  ops.status = status.view();
  Buffer work;
  if (give_workspace) ops.workspace = (work = ctx.create_buffer(plan.workspace_bytes())).view();
  MoeLayerGradients g;
  g.d_y = dy.view(), g.d_x = dx.view(0, s.x), g.d_router_w = drw.view(0, s.router_w);
  g.d_w_up = dwu.view(0, s.w_up), g.d_w_down = dwd.view(0, s.w_down);
  if (p.up_bias) ops.b_up = (bu = up(w.b_up)).view(), g.d_b_up = (dbu = poisoned(ctx, s.b_up)).view(0, s.b_up);
  if (p.down_bias) ops.b_down = (bd = up(w.b_down)).view(), g.d_b_down = (dbd = poisoned(ctx, s.b_down)).view(0, s.b_down);
  ctx.submit_and_wait([&](VkCommandBuffer cb) {
    plan.record_forward(cb, ops);
    if (!p.forward_only) plan.record_backward(cb, ops, g);
  });
  expect_clean_status(status);
  DeviceLayer r;
  r.y = download(y, DType::f32, s.y / 4);
  r.d_x = download(dx, DType::f32, s.x / 4);
  r.d_router_w = download(drw, DType::f32, s.router_w / 4);
  r.d_w_up = download(dwu, DType::f32, s.w_up / 4);
  r.d_w_down = download(dwd, DType::f32, s.w_down / 4);
  if (p.up_bias) r.d_b_up = download(dbu, DType::f32, s.b_up / 4);
  if (p.down_bias) r.d_b_down = download(dbd, DType::f32, s.b_down / 4);
  return r;
}

MoeWeights make_params(const MoeLayerProblem& p, std::mt19937& rng) {
  std::normal_distribution<double> d(0.0, 0.5);
  auto fill = [&](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = float(d(rng));  // exact in f32: the device sees the same values
    return v;
  };
  const int64_t e_local = p.local_experts < 0 ? p.num_experts - p.expert_offset : p.local_experts;
  const int64_t n_up = gated(p.activation) ? 2 * p.d_ff : p.d_ff;
  MoeWeights w;
  w.x = fill(p.tokens * p.d_model);
  w.router_w = fill(p.d_model * p.num_experts);
  for (double& e : w.router_w) e *= 4;  // logits far apart: no near ties for the differences to cross
  w.w_up = fill(e_local * p.d_model * n_up);
  w.w_down = fill(e_local * p.d_ff * p.d_model);
  w.b_up = fill(e_local * n_up);
  w.b_down = fill(e_local * p.d_model);
  return w;
}

double dot(const std::vector<float>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

// d <d_y, layer(w)> / d v for every element of v, by central differences.
std::vector<double> numeric(const MoeLayerProblem& p, MoeWeights& w, std::vector<double>& v, const std::vector<float>& d_y) {
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i], h = 1e-6;
    v[i] = keep + h;
    const double a = dot(d_y, reference_layer(p, w));
    v[i] = keep - h;
    const double b = dot(d_y, reference_layer(p, w));
    v[i] = keep;
    g[i] = (a - b) / (2 * h);
  }
  return g;
}

void expect_gradients(const MoeLayerProblem& p, MoeWeights& w, const std::vector<float>& d_y, const DeviceLayer& got) {
  constexpr double atol = 2e-3, rtol = 2e-3;
  EXPECT_TRUE(all_close(got.y, as_float(reference_layer(p, w)), atol, rtol)) << "y";
  EXPECT_TRUE(all_close(got.d_x, as_float(numeric(p, w, w.x, d_y)), atol, rtol)) << "d_x";
  EXPECT_TRUE(all_close(got.d_router_w, as_float(numeric(p, w, w.router_w, d_y)), atol, rtol)) << "d_router_w";
  EXPECT_TRUE(all_close(got.d_w_up, as_float(numeric(p, w, w.w_up, d_y)), atol, rtol)) << "d_w_up";
  EXPECT_TRUE(all_close(got.d_w_down, as_float(numeric(p, w, w.w_down, d_y)), atol, rtol)) << "d_w_down";
  if (p.up_bias) EXPECT_TRUE(all_close(got.d_b_up, as_float(numeric(p, w, w.b_up, d_y)), atol, rtol)) << "d_b_up";
  if (p.down_bias) EXPECT_TRUE(all_close(got.d_b_down, as_float(numeric(p, w, w.b_down, d_y)), atol, rtol)) << "d_b_down";
}

MoeLayerProblem small_layer(Activation a, bool renormalize, bool biases) {
  MoeLayerProblem p;
  p.tokens = 7, p.d_model = 6, p.d_ff = 5, p.num_experts = 4, p.top_k = 2;
  p.activation = a, p.renormalize = renormalize, p.up_bias = p.down_bias = biases;
  return p;
}

// On a context whose app gives every workspace (ContextOptions::app_workspaces) the layer allocates none,
// refuses a pass without one, and with the app's gives the bits of a default context's layer.
TEST_F(DeviceTest, MoeLayerTakesTheAppsWorkspace) {
  const MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  std::mt19937 rng(4);
  const MoeWeights w = make_params(p, rng);
  const std::vector<float> d_y = random_values(size_t(p.tokens * p.d_model), DType::f32, rng);
  ContextOptions o;
  o.app_workspaces = true;
  Context app = make_context(o);
  // The device memory each layer holds: the app's, less the workspace, than the default's.
  auto held = [&](Context& c) {
    const BufferRegistry& buffers = ContextInternals::of(c).buffers;
    const uint64_t before = buffers.held_bytes();
    const MoeLayerPlan layer(c, p);
    return buffers.held_bytes() - before;
  };
  const MoeLayerPlan plan(app, p);
  EXPECT_LE(held(app) + plan.workspace_bytes(), held(ctx()));
  const std::string refusal = "moe_layer: workspace: the plan has none of its own (ContextOptions::app_workspaces)";
  expect_invalid_argument([&] { app.submit_and_wait([&](VkCommandBuffer cb) { plan.record_forward(cb, {}); }); },
                          refusal);
  expect_invalid_argument(
      [&] { app.submit_and_wait([&](VkCommandBuffer cb) { plan.record_backward(cb, {}, {}); }); }, refusal);
  const DeviceLayer mine = run_layer(ctx(), p, w, d_y), theirs = run_layer(app, p, w, d_y, nullptr, true);
  for (const auto& [a, b] : {std::pair{&mine.y, &theirs.y}, {&mine.d_x, &theirs.d_x}, {&mine.d_router_w, &theirs.d_router_w},
                             {&mine.d_w_up, &theirs.d_w_up}, {&mine.d_b_up, &theirs.d_b_up},
                             {&mine.d_w_down, &theirs.d_w_down}, {&mine.d_b_down, &theirs.d_b_down}})
    EXPECT_TRUE(same_bits(*a, *b));
}

TEST_F(DeviceTest, MoeLayerGradientsMatchFiniteDifferences) {
  for (const MoeLayerProblem& p : {small_layer(Activation::swiglu, true, true), small_layer(Activation::geglu, false, false),
                                   small_layer(Activation::none, true, true)}) {
    SCOPED_TRACE(std::string(activation_name(p.activation)) + (p.renormalize ? " renormalized" : ""));
    std::mt19937 rng(21);
    MoeWeights w = make_params(p, rng);
    const std::vector<float> d_y = random_values(size_t(p.tokens * p.d_model), DType::f32, rng);
    expect_gradients(p, w, d_y, run_layer(ctx(), p, w, d_y));
  }
}

// Shards of the experts, accumulating y, d_x and d_router_w, add up to the whole layer; each shard's
// weight gradients are the whole layer's for its experts.
TEST_F(DeviceTest, MoeLayerShardsAddUp) {
  MoeLayerProblem whole = small_layer(Activation::swiglu, true, true);
  std::mt19937 rng(5);
  MoeWeights w = make_params(whole, rng);
  const std::vector<float> d_y = random_values(size_t(whole.tokens * whole.d_model), DType::f32, rng);
  const DeviceLayer full = run_layer(ctx(), whole, w, d_y);
  DeviceLayer sum;
  sum.y.assign(full.y.size(), 0.0f);
  sum.d_x.assign(full.d_x.size(), 0.0f);
  sum.d_router_w.assign(full.d_router_w.size(), 0.0f);
  std::vector<float> d_w_up, d_w_down;
  const int64_t n_up = 2 * whole.d_ff;
  for (const auto& [offset, count] : {std::pair<int64_t, int64_t>{0, 1}, {1, 3}}) {
    MoeLayerProblem p = whole;
    p.expert_offset = offset, p.local_experts = count, p.accumulate = true;
    MoeWeights part = w;
    auto cut = [&](const std::vector<double>& v, int64_t per) {
      return std::vector<double>(v.begin() + offset * per, v.begin() + (offset + count) * per);
    };
    part.w_up = cut(w.w_up, whole.d_model * n_up);
    part.w_down = cut(w.w_down, whole.d_ff * whole.d_model);
    part.b_up = cut(w.b_up, n_up);
    part.b_down = cut(w.b_down, whole.d_model);
    const DeviceLayer got = run_layer(ctx(), p, part, d_y, &sum);
    sum.y = got.y, sum.d_x = got.d_x, sum.d_router_w = got.d_router_w;
    d_w_up.insert(d_w_up.end(), got.d_w_up.begin(), got.d_w_up.end());
    d_w_down.insert(d_w_down.end(), got.d_w_down.begin(), got.d_w_down.end());
  }
  EXPECT_TRUE(all_close(sum.y, full.y, 1e-4, 1e-4)) << "y";
  EXPECT_TRUE(all_close(sum.d_x, full.d_x, 1e-4, 1e-4)) << "d_x";
  EXPECT_TRUE(all_close(sum.d_router_w, full.d_router_w, 1e-4, 1e-4)) << "d_router_w";
  EXPECT_TRUE(all_close(d_w_up, full.d_w_up, 1e-5, 1e-5)) << "d_w_up";
  EXPECT_TRUE(all_close(d_w_down, full.d_w_down, 1e-5, 1e-5)) << "d_w_down";
}

// The layer's views for `plan`, each between guard regions (Guarded): the weights, x and d_y given, every
// output and the app's workspace poisoned.
struct GuardedLayer {
  Guarded x, rw, wu, wd, bu, bd, dy, y, dx, drw, dwu, dwd, dbu, dbd, work, status;
  MoeLayerOperands ops;
  MoeLayerGradients g;
  GuardedLayer(Context& c, const MoeLayerPlan& plan, const MoeWeights& w, const std::vector<float>& d_y)
      : x(guarded_floats(c, as_float(w.x))), rw(guarded_floats(c, as_float(w.router_w))),
        wu(guarded_floats(c, as_float(w.w_up))), wd(guarded_floats(c, as_float(w.w_down))),
        bu(guarded_floats(c, as_float(w.b_up))), bd(guarded_floats(c, as_float(w.b_down))), dy(guarded_floats(c, d_y)),
        y(c, plan.sizes().y), dx(c, plan.sizes().x), drw(c, plan.sizes().router_w), dwu(c, plan.sizes().w_up),
        dwd(c, plan.sizes().w_down), dbu(c, plan.sizes().b_up), dbd(c, plan.sizes().b_down),
        work(c, plan.workspace_bytes()), status(c, 4) {
    ops.x = x.view(), ops.router_w = rw.view(), ops.w_up = wu.view(), ops.w_down = wd.view(), ops.y = y.view();
    ops.workspace = work.view(), ops.status = status.view();
    g.d_y = dy.view(), g.d_x = dx.view(), g.d_router_w = drw.view(), g.d_w_up = dwu.view(), g.d_w_down = dwd.view();
    if (plan.problem().up_bias) ops.b_up = bu.view(), g.d_b_up = dbu.view();
    if (plan.problem().down_bias) ops.b_down = bd.view(), g.d_b_down = dbd.view();
  }
  uint32_t status_word() const {
    uint32_t word = ~0u;
    std::memcpy(&word, status.get().data(), 4);
    return word;
  }
  void expect_guards_intact() const {
    for (const Guarded* b : {&x, &rw, &wu, &wd, &bu, &bd, &dy, &y, &dx, &drw, &dwu, &dwd, &dbu, &dbd, &work, &status})
      EXPECT_TRUE(b->guards_intact());
  }
};

// The backward reads what the forward left in the workspace (its one routing build, the ids and weights,
// the saved pre-activations): rewritten in between, every pass stays inside its views and the status word
// says what the backward's copy of the routing found (bad_routing: a row-map entry past the slots; bad_id:
// an id below -1 or past num_experts; sum_above_m: the experts' counts add up past the slots); words that
// each look like a routing's (below the experts, counts within the slots) go unreported, as documented.
// Where every expert's count reads negative (taken as none), each expert's gradient is 0, as in a layer of
// no tokens. A forward and backward over that workspace then give the bits of an untouched layer's:
// nothing of the rewrite stays.
TEST_F(DeviceTest, MoeLayerBackwardOfARewrittenWorkspaceStaysInside) {
  const MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  std::mt19937 rng(9);
  const MoeWeights w = make_params(p, rng);
  const std::vector<float> d_y = random_values(size_t(p.tokens * p.d_model), DType::f32, rng);
  const DeviceLayer untouched = run_layer(ctx(), p, w, d_y);
  const MoeLayerPlan plan(ctx(), p);
  GuardedLayer layer(ctx(), plan, w, d_y);
  const uint32_t routing = device_status::bad_routing, id = device_status::bad_id, sum = device_status::sum_above_m;
  // Below the experts, and num_experts counts of them add up to at most the slots.
  const uint32_t plausible = uint32_t(std::min(p.tokens * p.top_k / p.num_experts + 1, p.num_experts));
  struct Pattern {
    const char* name;
    std::function<int32_t()> word;
    uint32_t status;
    bool no_rows;  // every count negative
  };
  const Pattern patterns[] = {
      {"INT32_MAX", [] { return INT32_MAX; }, routing | id | sum, false},
      {"-1", [] { return -1; }, routing, true},
      {"INT32_MIN", [] { return INT32_MIN; }, routing | id, true},
      {"random", [&] { return int32_t(rng()); }, routing | id | sum, false},
      {"plausible", [&] { return int32_t(rng() % plausible); }, 0, false},
  };
  for (const Pattern& pattern : patterns) {
    SCOPED_TRACE(pattern.name);
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record_forward(cb, layer.ops); });
    std::vector<int32_t> junk(size_t(plan.workspace_bytes() / 4));
    for (int32_t& word : junk) word = pattern.word();
    layer.work.set(junk.data(), junk.size() * 4);
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record_backward(cb, layer.ops, layer.g); });
    EXPECT_EQ(layer.status_word(), pattern.status);
    layer.expect_guards_intact();
    if (pattern.no_rows)
      for (const Guarded* b : {&layer.dwu, &layer.dwd, &layer.dbu, &layer.dbd})
        EXPECT_EQ(b->get(), std::vector<uint8_t>(b->bytes, 0)) << "an expert's gradient of no rows";
  }
  ctx().submit_and_wait([&](VkCommandBuffer cb) {
    plan.record_forward(cb, layer.ops);
    plan.record_backward(cb, layer.ops, layer.g);
  });
  const std::pair<const Guarded*, const std::vector<float>*> outputs[] = {
      {&layer.y, &untouched.y},         {&layer.dx, &untouched.d_x},          {&layer.drw, &untouched.d_router_w},
      {&layer.dwu, &untouched.d_w_up},  {&layer.dwd, &untouched.d_w_down},    {&layer.dbu, &untouched.d_b_up},
      {&layer.dbd, &untouched.d_b_down}};
  for (const auto& [got, want] : outputs) EXPECT_TRUE(same_bits(floats(*got), *want));
}

// Tokens whose x holds NaN or +-inf (top-k ranks NaN logits as -inf, so their ids keep the contract and
// the status word stays clean): the other tokens' y and d_x rows are the bits of a layer whose x is finite
// there (a token's rows depend on its own x alone), the non-finite tokens' y rows hold no finite value,
// and nothing outside the views is written.
TEST_F(DeviceTest, MoeLayerNonFiniteTokensLeaveTheOthersBits) {
  const MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  std::mt19937 rng(12);
  MoeWeights w = make_params(p, rng);
  const std::vector<float> d_y = random_values(size_t(p.tokens * p.d_model), DType::f32, rng);
  const DeviceLayer finite = run_layer(ctx(), p, w, d_y);
  const double inf = std::numeric_limits<double>::infinity();
  const size_t d = size_t(p.d_model);
  for (size_t i = 0; i < d; ++i) {
    w.x[1 * d + i] = std::numeric_limits<double>::quiet_NaN();
    w.x[4 * d + i] = i % 3 == 0 ? inf : i % 3 == 1 ? -inf : std::numeric_limits<double>::quiet_NaN();
  }
  w.x[6 * d + 2] = inf;
  const MoeLayerPlan plan(ctx(), p);
  GuardedLayer layer(ctx(), plan, w, d_y);
  ctx().submit_and_wait([&](VkCommandBuffer cb) {
    plan.record_forward(cb, layer.ops);
    plan.record_backward(cb, layer.ops, layer.g);
  });
  EXPECT_EQ(layer.status_word(), 0u);
  layer.expect_guards_intact();
  const std::vector<float> y = floats(layer.y), d_x = floats(layer.dx);
  for (size_t t = 0; t < size_t(p.tokens); ++t) {
    const auto row = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + std::ptrdiff_t(t * d), v.begin() + std::ptrdiff_t((t + 1) * d));
    };
    SCOPED_TRACE("token " + std::to_string(t));
    if (t == 1 || t == 4 || t == 6) {
      for (float v : row(y)) EXPECT_FALSE(std::isfinite(v));
      continue;
    }
    EXPECT_TRUE(same_bits(row(y), row(finite.y))) << "y";
    EXPECT_TRUE(same_bits(row(d_x), row(finite.d_x))) << "d_x";
  }
}

// forward_only (inference): y to the bit as the training plan's, against the reference; a smaller
// workspace and fewer pipelines (compiled as the plans are made, on an eager context); the backward
// refused by name before anything is recorded.
TEST_F(DeviceTest, MoeLayerForwardOnly) {
  std::mt19937 rng(41);
  MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  MoeWeights w = make_params(p, rng);
  const std::vector<float> d_y(size_t(p.tokens * p.d_model), 0.5f);
  MoeLayerProblem f = p;
  f.forward_only = true;
  const DeviceLayer full = run_layer(ctx(), p, w, d_y), forward = run_layer(ctx(), f, w, d_y);
  EXPECT_TRUE(same_bits(forward.y, full.y));
  EXPECT_TRUE(all_close(forward.y, as_float(reference_layer(p, w)), 2e-3, 2e-3));
  ContextOptions eager;
  eager.eager_pipelines = true;
  Context a = make_context(eager), b = make_context(eager);
  const MoeLayerPlan train(a, p), infer(b, f);
  EXPECT_LT(infer.workspace_bytes(), train.workspace_bytes());
  const size_t train_pipelines = ContextInternals::of(a).pipelines.size();
  EXPECT_LT(ContextInternals::of(b).pipelines.size(), train_pipelines);
  expect_invalid_argument([&] { infer.record_backward(VK_NULL_HANDLE, {}, {}); },
                          "moe_layer: record_backward: the plan was made with forward_only");
}

// The layer's plans that use a workspace are parts of it, each given its share of the layer's: the device
// memory the plan holds is that workspace, router_dx's constant ids and weights ([T] each) and the router
// gmm's and its tgmm's host-built group offsets (a few words), not every part's workspace again. So for a
// routed backward's own parts (its recomputing forward, d_bias's tgmm): what it holds is what its
// metadata_bytes() says.
TEST_F(DeviceTest, MoeLayerPlanHoldsOneWorkspace) {
  MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  p.tokens = 384, p.d_model = 64, p.d_ff = 96, p.num_experts = 8, p.top_k = 2;
  const BufferRegistry& buffers = ContextInternals::of(ctx()).buffers;
  // Each allocation may be padded: to whole 16-byte texels, and by the driver to its memory alignment.
  // Far less than the parts' own workspaces were (over 3 MB here).
  constexpr uint64_t kPadding = 8 * 64 * 1024;
  const uint64_t before = buffers.held_bytes();
  {
    const MoeLayerPlan plan(ctx(), p);
    const uint64_t held = buffers.held_bytes() - before;
    const uint64_t want = plan.workspace_bytes() + 2 * uint64_t(p.tokens) * 4;
    EXPECT_GE(held, want);
    EXPECT_LE(held, want + kPadding) << "held " << held << ", the layer's workspace " << plan.workspace_bytes();
  }
  EXPECT_EQ(buffers.held_bytes(), before);

  GmmProblem f;
  f.m = 384, f.k = 64, f.n = 192, f.num_rhs_groups = 8;
  f.routing = {2, false, true, 8};
  f.epilogue = {true, Activation::swiglu, false};
  const GmmBackwardPlan bw(ctx(), f);
  const uint64_t held = buffers.held_bytes() - before;
  // Its own workspace, and d_lhs's and d_rhs's plans' (public: an app may record them on their own).
  const uint64_t want = bw.workspace_bytes() + bw.d_lhs_plan().workspace_bytes() + bw.d_rhs_plan().workspace_bytes();
  EXPECT_GE(bw.metadata_bytes(), want);
  EXPECT_GE(held, bw.metadata_bytes());
  EXPECT_LE(held, want + kPadding) << "held " << held << ", the backward's workspace " << bw.workspace_bytes();
}

// A layer of no tokens: the forward writes nothing, the backward every weight's gradient as 0 (each
// starts poisoned) and its biases' too.
TEST_F(DeviceTest, MoeLayerOfNoTokens) {
  MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  p.tokens = 0;
  std::mt19937 rng(3);
  MoeWeights w = make_params(p, rng);
  expect_gradients(p, w, {}, run_layer(ctx(), p, w, {}));
}

TEST_F(DeviceTest, MoeLayerRefusesBadProblems) {
  const std::pair<std::function<void(MoeLayerProblem&)>, const char*> cases[] = {
      {[](MoeLayerProblem& p) { p.expert_offset = 5; }, "expert_offset: 5 must be in [0, num_experts = 4]"},
      {[](MoeLayerProblem& p) { p.local_experts = 9; }, "local_experts: 9"},
      {[](MoeLayerProblem& p) { p.local_experts = -7; }, "moe_layer: local_experts: -7 must be in [0, num_experts"},
      {[](MoeLayerProblem& p) { p.d_ff = 0; }, "d_ff: 0 must be at least 1"},
      {[](MoeLayerProblem& p) { p.top_k = 5; }, "moe_layer: top_k: 5 must be in [1, num_experts = 4]"},
      {[](MoeLayerProblem& p) { p.top_k = 0; }, "moe_layer: top_k: 0 must be in [1, num_experts = 4]"},
      {[](MoeLayerProblem& p) { p.num_experts = 0; }, "moe_layer: num_experts: 0 must be at least 1"},
      {[](MoeLayerProblem& p) { p.dtype = DType(77); }, "moe_layer: dtype: 77 is not a vkgmm type"},
      {[](MoeLayerProblem& p) { p.dtype = DType::q4_0; }, "moe_layer: dtype: q4_0 is a block format"},
      {[](MoeLayerProblem& p) { p.weight_type = DType::q8_0; },
       "moe_layer: d_model = 6 must be a multiple of 32: weight_type q8_0 holds blocks of 32 values along it"},
      {[](MoeLayerProblem& p) { p.d_model = 32, p.down_weight_type = DType::q4_K; },
       "moe_layer: d_ff = 5 must be a multiple of 256: down_weight_type q4_K"},
  };
  for (const auto& [change, message] : cases) {
    MoeLayerProblem p = small_layer(Activation::swiglu, true, false);
    change(p);
    expect_invalid_argument([&] { MoeLayerPlan(ctx(), p); }, message);
  }
  // A limit of a pass names the pass.
  MoeLayerProblem many = small_layer(Activation::swiglu, true, false);
  many.num_experts = many.local_experts = 70000;
  expect_refused([&] { MoeLayerPlan(ctx(), many); }, Status::unsupported,
                 "moe_layer: the up projection (x @ w_up): gmm: num_rhs_groups");
}

// The passes read and write the layer's views in an order of their own, so a written view that shares
// bytes with another one is refused before anything is recorded, naming both: y on x (the backward would
// read y's values as x) or on the weights, x inside the workspace (top-k writes its ids there before the
// up projection reads x), a gradient inside the workspace or on a weight.
TEST_F(DeviceTest, MoeLayerRefusesOverlappingViews) {
  const MoeLayerProblem p = small_layer(Activation::swiglu, true, true);
  const MoeLayerPlan plan(ctx(), p);
  const MoeLayerSizes s = plan.sizes();
  const VkDeviceSize work_bytes = plan.workspace_bytes();
  // One buffer of regions 256 bytes apart (every view's offset aligned), each as large as the largest view.
  const VkDeviceSize region = (std::max({s.x, s.router_w, s.w_up, s.w_down, s.b_up, s.b_down, s.y, work_bytes}) + 255) / 256 * 256;
  Buffer all = ctx().create_buffer(region * 16);
  auto at = [&](int i, VkDeviceSize bytes) { return all.view(VkDeviceSize(i) * region, bytes); };
  MoeLayerOperands ops;
  ops.x = at(0, s.x), ops.router_w = at(1, s.router_w), ops.w_up = at(2, s.w_up), ops.w_down = at(3, s.w_down);
  ops.b_up = at(4, s.b_up), ops.b_down = at(5, s.b_down), ops.y = at(6, s.y), ops.workspace = at(7, work_bytes);
  MoeLayerGradients g;
  g.d_y = at(8, s.y), g.d_x = at(9, s.x), g.d_router_w = at(10, s.router_w), g.d_w_up = at(11, s.w_up);
  g.d_b_up = at(12, s.b_up), g.d_w_down = at(13, s.w_down), g.d_b_down = at(14, s.b_down);
  auto forward = [&](const MoeLayerOperands& o) {
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record_forward(cb, o); });
  };
  auto backward = [&](const MoeLayerOperands& o, const MoeLayerGradients& d) {
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record_backward(cb, o, d); });
  };
  forward(ops);  // apart, they are taken
  backward(ops, g);
  MoeLayerOperands o = ops;
  o.y = at(0, s.y);
  expect_invalid_argument([&] { forward(o); }, "moe_layer: y overlaps x");
  o = ops;
  o.y = at(2, s.y);
  expect_invalid_argument([&] { forward(o); }, "moe_layer: y overlaps w_up");
  o = ops;
  o.x = all.view(7 * region + 64, s.x);
  expect_invalid_argument([&] { forward(o); }, "moe_layer: workspace overlaps x");
  MoeLayerGradients d = g;
  d.d_x = at(7, s.x);
  expect_invalid_argument([&] { backward(ops, d); }, "moe_layer: workspace overlaps d_x");
  d = g;
  d.d_b_down = at(1, s.b_down);
  expect_invalid_argument([&] { backward(ops, d); }, "moe_layer: d_b_down overlaps router_w");
  d = g;
  d.d_router_w = at(8, s.router_w);
  expect_invalid_argument([&] { backward(ops, d); }, "moe_layer: d_router_w overlaps d_y");

  // A workspace the passes take in slices is checked whole.
  o = ops;
  o.workspace = BufferView{all.handle(), region * 16 - 256, work_bytes};
  ASSERT_GT(work_bytes, 256u);
  expect_invalid_argument([&] { forward(o); }, "moe_layer: workspace: the view [");

  // A view the passes refuse is named as the layer's field, not as the pass's operand.
  const std::pair<std::function<void(MoeLayerOperands&)>, const char*> forward_cases[] = {
      {[&](MoeLayerOperands& o) { o.x.size -= 4; }, "moe_layer: x: view of"},
      {[&](MoeLayerOperands& o) { o.router_w.size -= 4; }, "moe_layer: router_w: view of"},
      {[&](MoeLayerOperands& o) { o.w_up.size -= 4; }, "moe_layer: w_up: view of"},
      {[&](MoeLayerOperands& o) { o.w_down = {}; }, "moe_layer: w_down: buffer is VK_NULL_HANDLE"},
      {[&](MoeLayerOperands& o) { o.y.size -= 4; }, "moe_layer: y: view of"},
      {[&](MoeLayerOperands& o) { o.b_up.offset += 2; }, "moe_layer: b_up: offset"},
      {[&](MoeLayerOperands& o) { o.b_down = {}; }, "moe_layer: b_down: down_bias is on but no view was given"},
  };
  for (const auto& [change, message] : forward_cases) {
    o = ops;
    change(o);
    expect_invalid_argument([&] { forward(o); }, message);
  }
  const std::pair<std::function<void(MoeLayerGradients&)>, const char*> backward_cases[] = {
      {[&](MoeLayerGradients& e) { e.d_y.size -= 4; }, "moe_layer: d_y: view of"},
      {[&](MoeLayerGradients& e) { e.d_x.size -= 4; }, "moe_layer: d_x: view of"},
      {[&](MoeLayerGradients& e) { e.d_router_w.size -= 4; }, "moe_layer: d_router_w: view of"},
      {[&](MoeLayerGradients& e) { e.d_w_up.size -= 4; }, "moe_layer: d_w_up: view of"},
      {[&](MoeLayerGradients& e) { e.d_w_down = {}; }, "moe_layer: d_w_down:"},
  };
  for (const auto& [change, message] : backward_cases) {
    d = g;
    change(d);
    expect_invalid_argument([&] { backward(ops, d); }, message);
  }
  // Without biases, a bias view given is refused naming the layer's switch.
  const MoeLayerPlan plain(ctx(), small_layer(Activation::swiglu, true, false));
  expect_invalid_argument([&] { ctx().submit_and_wait([&](VkCommandBuffer cb) { plain.record_forward(cb, ops); }); },
                          "moe_layer: b_up: a view was given but up_bias is off");
  MoeLayerOperands no_bias = ops;
  no_bias.b_up = no_bias.b_down = {};
  expect_invalid_argument(
      [&] { ctx().submit_and_wait([&](VkCommandBuffer cb) { plain.record_backward(cb, no_bias, g); }); },
      "moe_layer: d_b_up: a view was given but up_bias is off");
}

}  // namespace
}  // namespace vkgmm::test
