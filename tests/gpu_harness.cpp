#include "gpu_harness.hpp"

#include "context_impl.hpp"  // take_teardown_messages
#include "interface.h"       // VKGMM_ID_USE_SHARED
#include "options.hpp"       // device_grid
#include "plan_internals.hpp"
#include "vkgmm/quant.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <map>
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <sstream>

namespace vkgmm::test {

namespace {

// The process's contexts, by the schedule they force (automatic: the shared one, forcing nothing).
std::unique_ptr<Context>& context_slot(Schedule schedule) {
  static std::unique_ptr<Context> contexts[4];
  return contexts[static_cast<size_t>(schedule)];
}
constexpr Schedule kSchedules[] = {Schedule::automatic, Schedule::shared, Schedule::direct, Schedule::matrix};

// The shared Contexts are destroyed before the program's result is final, and whatever the validation
// layer reports while they go (vkDestroyDevice / vkDestroyInstance list leaked objects) fails the run.
class TeardownCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    for (Schedule s : kSchedules) context_slot(s).reset();
    for (const auto& m : take_teardown_messages()) ADD_FAILURE() << "at Context teardown: " << m;
  }
};
[[maybe_unused]] ::testing::Environment* const kTeardownCheck =
    ::testing::AddGlobalTestEnvironment(new TeardownCheck);

}  // namespace

Context& DeviceTest::ctx() { return ctx(Schedule::automatic); }

namespace {
// RADV_FORCE_FAMILY (the gpu-report tests' alone) makes RADV enumerate a null device as a discrete GPU,
// which a default Context prefers: it compiles but cannot run work, so a device test that landed on it
// would fail far from the cause. Named here instead.
Context runs_work(Context c) {
  if (std::getenv("RADV_FORCE_FAMILY") && c.info().name.find("RADV") != std::string::npos)
    throw std::runtime_error("device tests picked " + c.info().name +
                             ", RADV's null device (RADV_FORCE_FAMILY is set): it cannot run work; unset it or "
                             "name the device (VKGMM_DEVICE)");
  return c;
}
}  // namespace

Context& DeviceTest::ctx(Schedule schedule) {
  // Created once per process; validation is forced on whatever the environment says.
  static std::mutex mutex;  // the thread tests may reach here first from several threads
  std::lock_guard lock(mutex);
  auto& context = context_slot(schedule);
  if (!context) {
    ContextOptions o;
    o.validate = true;
    if (schedule != Schedule::automatic) o.schedule = schedule;
    context = std::make_unique<Context>(runs_work(Context(o)));
  }
  return *context;
}

Context DeviceTest::make_context(ContextOptions options) {
  options.validate = true;
  return runs_work(Context(options));
}

bool reads_texel_views(const Context& c, bool sixteen) {
  return c.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU && c.info().texel_loads_32bit &&
         (!sixteen || c.info().texel_loads_16bit) && c.options().texel_loads.value_or(true);
}

Context binding_limited_context(uint64_t bytes, ContextOptions options) {
  Context c = DeviceTest::make_context(options);
  uint64_t& range = ContextInternals::of(c).dev.info.max_storage_buffer_range;
  range = std::min(range, bytes);
  return c;
}

Context cpu_planned_context(ContextOptions options) {
  Context c = DeviceTest::make_context(options);
  TilingDevice& tiling = ContextInternals::of(c).tiling_device;
  if (tiling.of(c.info()).type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
    DeviceInfo cpu = c.info();
    cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    tiling.as = cpu;
  }
  return c;
}

Context gpu_planned_context(ContextOptions options, uint32_t compute_units) {
  Context c = DeviceTest::make_context(options);
  ContextInternals::of(c).tiling_device.as = discrete_gpu_like(c.info(), 512, compute_units, 64);
  return c;
}

void DeviceTest::TearDown() {
  for (Schedule s : kSchedules) {
    if (s != Schedule::automatic && !context_slot(s)) continue;
    for (auto& m : ctx(s).take_validation_messages()) ADD_FAILURE() << "validation message: " << m;
  }
}

const char* sizes_name(Sizes kind) {
  switch (kind) {
    case Sizes::random: return "random";
    case Sizes::empty_ends: return "empty_ends";
    case Sizes::one_group_all: return "one_group_all";
    case Sizes::split_tiles: return "split_tiles";
    case Sizes::sum_below_m: return "sum_below_m";
  }
  return "?";
}

namespace {
// A uniform random composition of `total` into G non-negative parts.
std::vector<int32_t> random_split(int64_t total, int64_t G, std::mt19937& rng) {
  std::vector<int64_t> cuts(G - 1);
  std::uniform_int_distribution<int64_t> d(0, total);
  for (auto& c : cuts) c = d(rng);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int32_t> sizes(G);
  int64_t prev = 0;
  for (int64_t g = 0; g < G - 1; ++g) {
    sizes[g] = static_cast<int32_t>(cuts[g] - prev);
    prev = cuts[g];
  }
  sizes[G - 1] = static_cast<int32_t>(total - prev);
  return sizes;
}
}  // namespace

std::vector<int32_t> sizes_taken(const std::vector<int32_t>& sizes, int64_t m, uint32_t& status) {
  std::vector<int32_t> t;
  int64_t at = 0;
  status = 0;
  for (int32_t s : sizes) {
    if (s < 0) status |= device_status::negative_size;
    const int64_t want = at + std::max<int32_t>(s, 0);
    if (want > m) status |= device_status::sum_above_m;
    const int64_t end = std::min<int64_t>(want, m);
    t.push_back(static_cast<int32_t>(end - at));
    at = end;
  }
  return t;
}

std::vector<int32_t> make_group_sizes(Sizes kind, int64_t G, int64_t m, std::mt19937& rng) {
  switch (kind) {
    case Sizes::random:
      return random_split(m, G, rng);
    case Sizes::empty_ends: {
      // Groups 0, G/2 and G-1 empty; the others share the rows (with G = 3, the middle one takes all).
      std::vector<int32_t> sizes(G, 0);
      if (G < 3) return random_split(m, G, rng);
      if (G == 3) {
        sizes[1] = static_cast<int32_t>(m);
        return sizes;
      }
      std::vector<int32_t> inner = random_split(m, G - 3, rng);
      size_t j = 0;
      for (int64_t g = 0; g < G; ++g)
        if (g != 0 && g != G / 2 && g != G - 1) sizes[g] = inner[j++];
      return sizes;
    }
    case Sizes::one_group_all: {
      std::vector<int32_t> sizes(G, 0);
      sizes[G / 2] = static_cast<int32_t>(m);
      return sizes;
    }
    case Sizes::split_tiles: {
      // Odd sizes (3, 5, 7, ...) so group boundaries land inside tiles; the last group takes the rest.
      std::vector<int32_t> sizes(G, 0);
      int64_t left = m;
      for (int64_t g = 0; g < G - 1; ++g) {
        sizes[g] = static_cast<int32_t>(std::min<int64_t>(left, 2 * (g % 5) + 3));
        left -= sizes[g];
      }
      sizes[G - 1] = static_cast<int32_t>(left);
      return sizes;
    }
    case Sizes::sum_below_m: {
      std::uniform_int_distribution<int64_t> d(0, m);
      return random_split(d(rng) * 3 / 4, G, rng);
    }
  }
  return {};
}

namespace {

// Block-format values are made by quantizing random floats. The blocks are kept, by the values they
// decode to, so that upload() sends those very bytes: quantizing decoded values again need not give
// them back (the K formats search their scales).
std::mutex blocks_mutex;
std::map<std::vector<float>, std::vector<uint8_t>>& made_blocks() {
  static std::map<std::vector<float>, std::vector<uint8_t>> blocks;
  return blocks;
}

}  // namespace

std::vector<float> random_values(size_t count, DType t, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(count);
  if (is_quantized(t)) {
    for (auto& x : v) x = d(rng);
    std::vector<uint8_t> blocks = quant::quantize(t, v.data(), count);
    quant::dequantize(t, blocks.data(), count, v.data());
    std::lock_guard lock(blocks_mutex);
    made_blocks()[v] = std::move(blocks);
    return v;
  }
  for (auto& x : v) x = round_to(t, d(rng));
  return v;
}

namespace {

std::vector<uint8_t> encode_values(DType t, const std::vector<float>& values) {
  if (!is_quantized(t)) return encode(t, values);
  std::lock_guard lock(blocks_mutex);
  const auto it = made_blocks().find(values);
  return it != made_blocks().end() ? it->second : quant::quantize(t, values.data(), values.size());
}

}  // namespace

Buffer upload(Context& ctx, DType t, const std::vector<float>& values) {
  std::vector<uint8_t> bytes = encode_values(t, values);
  // Exactly the elements' bytes (odd 16-bit counts end mid-word): padding is vkgmm's job.
  Buffer b = ctx.create_buffer(std::max<size_t>(bytes.size(), 4));
  if (!bytes.empty()) b.upload(bytes.data(), bytes.size());
  return b;
}

std::vector<float> download(const Buffer& b, DType t, size_t count) {
  std::vector<uint8_t> bytes(count * dtype_size(t));
  if (!bytes.empty()) b.download(bytes.data(), bytes.size());
  return decode(t, bytes.data(), count);
}

// A poisoned output buffer: any element the kernel fails to write shows up as NaN-ish garbage.
Buffer poisoned(Context& ctx, size_t bytes) {
  Buffer b = ctx.create_buffer(std::max<size_t>(bytes, 4));
  std::vector<uint8_t> junk(b.size(), Guarded::kPoison);
  b.upload(junk.data(), junk.size());
  return b;
}

bool still_poisoned(const Buffer& b, size_t bytes) {
  std::vector<uint8_t> got(bytes);
  b.download(got.data(), bytes);
  for (uint8_t v : got)
    if (v != Guarded::kPoison) return false;
  return true;
}

namespace {

// The device path's views (all null on the host path): group sizes, workspace, status word.
struct DevicePathViews {
  BufferView group_sizes, workspace, status;
};

// Runs `run` (p itself, or p with its group sizes on the device) on p's data; the one body of the host
// and device runs below.
std::vector<float> gmm_on(Context& ctx, const GmmProblem& run, const GmmProblem& p, const std::vector<float>& lhs,
                          const std::vector<float>& rhs, const std::vector<float>& existing_out,
                          const std::vector<float>& bias, const DevicePathViews& dv) {
  Buffer l = upload(ctx, p.lhs_type, lhs), r = upload(ctx, p.rhs_type, rhs);
  const size_t out_count = gmm_out_elements(p);
  Buffer o = poisoned(ctx, out_count * dtype_size(p.out_type));
  Buffer e, b;
  if (p.existing_out) e = upload(ctx, p.out_type, existing_out);
  if (p.epilogue.bias) b = upload(ctx, DType::f32, bias);
  GmmOperands ops{l.view(), r.view(), o.view(), p.existing_out ? e.view() : BufferView{}, dv.group_sizes, dv.workspace,
                  dv.status};
  if (p.epilogue.bias) ops.bias = b.view();
  gmm(ctx, run, ops);
  return download(o, p.out_type, out_count);
}

std::vector<float> tgmm_on(Context& ctx, const TgmmProblem& run, const TgmmProblem& p, const std::vector<float>& lhs,
                           const std::vector<float>& rhs, const std::vector<float>& existing_out,
                           const DevicePathViews& dv) {
  Buffer l = upload(ctx, p.lhs_type, lhs), r = upload(ctx, p.rhs_type, rhs);
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());
  const int64_t groups = p.num_actual_groups < 0 ? G - p.group_offset : p.num_actual_groups;
  const size_t out_count = size_t(groups) * p.k * p.n;
  Buffer o = poisoned(ctx, out_count * dtype_size(p.out_type));
  Buffer e;
  if (p.existing_out) e = upload(ctx, p.out_type, existing_out);
  tgmm(ctx, run,
       {l.view(), r.view(), o.view(), p.existing_out ? e.view() : BufferView{}, dv.group_sizes, dv.workspace, dv.status});
  return download(o, p.out_type, out_count);
}

// With `app_workspace`, the backward gets a workspace of the test's own (workspace_bytes()).
reference::Gradients backward_on(Context& ctx, const GmmProblem& run, const GmmProblem& p,
                                 const std::vector<float>& lhs, const std::vector<float>& rhs,
                                 const std::vector<float>& d_out, DevicePathViews dv, bool app_workspace) {
  Buffer l = upload(ctx, p.lhs_type, lhs), r = upload(ctx, p.rhs_type, rhs), d = upload(ctx, p.out_type, d_out);
  const size_t dl_count = size_t(p.m) * p.k;
  const GmmBackwardPlan plan(ctx, run);
  // Block-format weights are frozen: no d_rhs (its view stays null).
  const size_t dr_count = plan.frozen_rhs() ? 0 : rhs.size();
  Buffer dl = poisoned(ctx, dl_count * dtype_size(p.lhs_type));
  Buffer dr = plan.frozen_rhs() ? Buffer() : poisoned(ctx, dr_count * dtype_size(p.rhs_type));
  Buffer work;
  // A frozen-weights backward of few rows has none: its d_lhs reads the sizes in the kernel.
  if (app_workspace && plan.workspace_bytes() > 0) {
    work = ctx.create_buffer(plan.workspace_bytes());
    dv.workspace = work.view();
  }
  ctx.submit_and_wait([&](VkCommandBuffer cb) {
    plan.record(cb, {l.view(), r.view(), d.view(), dl.view(), plan.frozen_rhs() ? BufferView{} : dr.view(),
                     dv.group_sizes, dv.workspace, dv.status});
  });
  return {download(dl, p.lhs_type, dl_count), plan.frozen_rhs() ? std::vector<float>{} : download(dr, p.rhs_type, dr_count)};
}

}  // namespace

std::vector<float> run_gmm(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                           const std::vector<float>& rhs, const std::vector<float>& existing_out,
                           const std::vector<float>& bias) {
  return gmm_on(ctx, p, p, lhs, rhs, existing_out, bias, {});
}

std::vector<float> run_tgmm(Context& ctx, const TgmmProblem& p, const std::vector<float>& lhs,
                            const std::vector<float>& rhs, const std::vector<float>& existing_out) {
  return tgmm_on(ctx, p, p, lhs, rhs, existing_out, {});
}

reference::Gradients run_backward(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs, const std::vector<float>& d_out) {
  return backward_on(ctx, p, p, lhs, rhs, d_out, {}, false);
}

namespace {

// The problem q with its host group sizes moved to a device buffer (returned), and the tiling and the
// schedule the host path's plan chose for p. The schedule too: on a GPU, gmm's automatic schedule follows
// the host group sizes (groups of a few rows take the direct schedule, gmm_schedule) only with an
// automatic tiling, so the fixed one alone would put the device path on the shared schedule.
template <typename Problem, typename Plan>
Buffer to_device_sizes(Context& ctx, const Problem& p, Problem& q) {
  q = p;
  const Plan host(ctx, p);
  q.tiling = TilingChoice::of(host.tiling());
  q.schedule = host.schedule();
  q.device_group_sizes.count = static_cast<int64_t>(p.group_sizes.size());
  q.group_sizes.clear();
  Buffer sizes = ctx.create_buffer(p.group_sizes.size() * 4);
  sizes.upload(p.group_sizes.data(), p.group_sizes.size() * 4);
  const Plan device(ctx, q);
  EXPECT_EQ(device.tiling(), host.tiling()) << "the device path must run the host path's tiling";
  EXPECT_STREQ(schedule_name(device.schedule()), schedule_name(host.schedule()))
      << "the device path must run the host path's schedule";
  return sizes;
}

}  // namespace

// A status word that starts as all ones, so that a run that never writes it fails too.
Buffer status_word(Context& ctx) {
  Buffer s = ctx.create_buffer(4);
  const uint32_t ones = ~0u;
  s.upload(&ones, 4);
  return s;
}

void expect_status(const Buffer& s, uint32_t want) {
  uint32_t v = ~0u;
  s.download(&v, 4);
  EXPECT_EQ(v, want) << "device status word";
}

void expect_clean_status(const Buffer& s) { expect_status(s, 0); }

GridHook::GridHook(Context& ctx, DeviceGrid grid) : Scoped(ContextInternals::of(ctx).tiling_device.grid, grid) {}

SizesInKernelHook::SizesInKernelHook(Context& ctx, bool on)
    : Scoped(ContextInternals::of(ctx).dev.options.sizes_in_kernel, on) {}

std::array<DeviceGrid, 2> GridHook::both(const Context& ctx) {
  const Context::Impl& im = ContextInternals::of(ctx);
  const DeviceGrid mine = device_grid(im.dev.options, im.dev.info);
  return {mine, mine == DeviceGrid::indirect ? DeviceGrid::upper_bound : DeviceGrid::indirect};
}

std::vector<float> run_gmm_device(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs, const std::vector<float>& existing_out,
                                  const std::vector<float>& bias) {
  // The metadata build on both grids, then where the plan takes it the sizes read in the kernel (a call of
  // few rows: a plan with no workspace).
  std::vector<std::vector<float>> outs;
  for (int path = 0; path < 3; ++path) {
    const GridHook grid(ctx, GridHook::both(ctx)[path % 2]);
    const SizesInKernelHook in_kernel(ctx, path == 2);
    GmmProblem q;
    Buffer sizes = to_device_sizes<GmmProblem, GmmPlan>(ctx, p, q), status = status_word(ctx);
    if (path == 2 && GmmPlan(ctx, q).workspace_bytes() > 0) break;
    outs.push_back(gmm_on(ctx, q, p, lhs, rhs, existing_out, bias, {sizes.view(), {}, status.view()}));
    expect_clean_status(status);  // written even when m = 0 (the metadata build runs)
  }
  EXPECT_TRUE(same_bits(outs[1], outs[0])) << "the indirect and upper-bound grids must agree";
  if (outs.size() > 2) EXPECT_TRUE(same_bits(outs[2], outs[0])) << "the sizes read in the kernel and the build must agree";
  return outs[0];
}

size_t gmm_out_elements(const GmmProblem& p) {
  const size_t rows = p.routing.top_k > 0 && !p.routing.combine ? size_t(p.m) * size_t(p.routing.top_k) : size_t(p.m);
  return rows * size_t(reference::out_columns(p));
}

std::vector<float> run_gmm_routed(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs, const std::vector<int32_t>& ids,
                                  const std::vector<float>& weights, const std::vector<float>& existing_out,
                                  const std::vector<float>& bias, uint32_t expected_status) {
  const GmmPlan plan(ctx, p);
  Buffer l = upload(ctx, p.lhs_type, lhs), r = upload(ctx, p.rhs_type, rhs);
  Buffer i = ctx.create_buffer(std::max<size_t>(ids.size() * 4, 4));
  if (!ids.empty()) i.upload(ids.data(), ids.size() * 4);
  const size_t out_count = gmm_out_elements(p);
  Buffer o = poisoned(ctx, out_count * dtype_size(p.out_type)), status = status_word(ctx);
  Buffer e, w, b;
  GmmOperands ops{l.view(), r.view(), o.view()};
  ops.ids = i.view(0, ids.size() * 4);
  ops.status = status.view();
  if (p.existing_out) ops.existing_out = (e = upload(ctx, p.out_type, existing_out)).view();
  if (p.routing.combine) ops.weights = (w = upload(ctx, DType::f32, weights)).view();
  if (p.epilogue.bias) ops.bias = (b = upload(ctx, DType::f32, bias)).view();
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  expect_status(status, expected_status);
  return download(o, p.out_type, out_count);
}

std::vector<float> run_tgmm_device(Context& ctx, const TgmmProblem& p, const std::vector<float>& lhs,
                                   const std::vector<float>& rhs, const std::vector<float>& existing_out) {
  TgmmProblem q;
  Buffer sizes = to_device_sizes<TgmmProblem, TgmmPlan>(ctx, p, q), status = status_word(ctx);
  std::vector<float> out = tgmm_on(ctx, q, p, lhs, rhs, existing_out, {sizes.view(), {}, status.view()});
  expect_clean_status(status);
  return out;
}

reference::Gradients run_backward_device(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                         const std::vector<float>& rhs, const std::vector<float>& d_out) {
  std::vector<reference::Gradients> gs;
  for (DeviceGrid g : GridHook::both(ctx)) {
    const GridHook grid(ctx, g);
    GmmProblem q;
    Buffer sizes = to_device_sizes<GmmProblem, GmmPlan>(ctx, p, q), status = status_word(ctx);
    // The backward's two plans pick their own tilings from the forward's: give it the forward's choice.
    q.tiling = p.tiling;
    // An app workspace this time (the plans' own are tested by gmm and tgmm above).
    gs.push_back(backward_on(ctx, q, p, lhs, rhs, d_out, {sizes.view(), {}, status.view()}, true));
    expect_clean_status(status);
  }
  EXPECT_TRUE(same_bits(gs[1].d_lhs, gs[0].d_lhs)) << "d_lhs: the indirect and upper-bound grids must agree";
  EXPECT_TRUE(same_bits(gs[1].d_rhs, gs[0].d_rhs)) << "d_rhs";
  return gs[0];
}

AppBuffer::AppBuffer(Context& ctx, const std::vector<uint8_t>& bytes, VkBufferUsageFlags usage)
    : device(ctx.device()) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes.size();
  bci.usage = usage;
  if (vkCreateBuffer(device, &bci, nullptr, &buffer) != VK_SUCCESS) throw std::runtime_error("vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, buffer, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = ContextInternals::of(ctx).dev.find_memory_type(
      req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (vkAllocateMemory(device, &mai, nullptr, &memory) != VK_SUCCESS ||
      vkBindBufferMemory(device, buffer, memory, 0) != VK_SUCCESS ||
      vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, &mapped) != VK_SUCCESS)
    throw std::runtime_error("app buffer memory");
  std::memcpy(mapped, bytes.data(), bytes.size());
}

AppBuffer::~AppBuffer() {
  vkDestroyBuffer(device, buffer, nullptr);
  vkFreeMemory(device, memory, nullptr);
}

Guarded::Guarded(Context& ctx, VkDeviceSize n) : buffer(ctx.create_buffer(n + 2 * kGuard)), bytes(n) {
  const std::vector<uint8_t> poison(n + 2 * kGuard, kPoison);
  buffer.upload(poison.data(), poison.size());
}

void Guarded::poison() {
  const std::vector<uint8_t> junk(bytes, kPoison);
  set(junk.data(), junk.size());
}

std::vector<uint8_t> Guarded::get() const {
  std::vector<uint8_t> v(bytes);
  buffer.download(v.data(), v.size(), kGuard);
  return v;
}

::testing::AssertionResult Guarded::guards_intact() const {
  std::vector<uint8_t> all(bytes + 2 * kGuard);
  buffer.download(all.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    if ((i < kGuard || i >= kGuard + bytes) && all[i] != kPoison)
      return ::testing::AssertionFailure() << "guard byte " << i << " changed";
  return ::testing::AssertionSuccess();
}

Guarded guarded_floats(Context& ctx, const std::vector<float>& v) {
  Guarded g(ctx, v.size() * 4);
  g.set(v.data(), v.size() * 4);
  return g;
}

std::vector<float> floats(const Guarded& g) {
  const std::vector<uint8_t> raw = g.get();
  std::vector<float> v(raw.size() / 4);
  std::memcpy(v.data(), raw.data(), raw.size());
  return v;
}

void expect_refused(const std::function<void()>& f, Status status, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

void expect_invalid_argument(const std::function<void()>& f, const std::string& needle) {
  expect_refused(f, Status::invalid_argument, needle);
}

::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

void expect_gmm_matches_reference(Context& ctx, const GmmProblem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  auto l = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto r = random_values(p.group_sizes.size() * size_t(p.k) * p.n, DType::f32, rng);
  EXPECT_TRUE(all_close(run_gmm(ctx, p, l, r), reference::gmm(p, l, r), 1e-3, 1e-5));
}

::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                                     double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  std::ostringstream os;
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w) || std::isnan(g))
      ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g))
      ok = g == w;  // rtol * inf would take any value
    else
      ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      if (bad < 5) os << "\n  [" << i << "] got " << g << " want " << w;
      ++bad;
    }
    if (!std::isnan(g) && !std::isnan(w)) worst = std::max(worst, std::fabs(g - w));
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ (max abs err " << worst
                                       << ", atol " << atol << ", rtol " << rtol << "):" << os.str();
}

Tolerance tolerance_for(DType a, DType b, DType out) {
  // Block-format weights are exact fp32 values once decoded: f32's tolerance.
  if (is_quantized(b)) b = DType::f32;
  if (a == DType::f32 && b == DType::f32 && out == DType::f32) return {1e-3, 1e-5};
  return {1e-3, 1e-2};
}

}  // namespace vkgmm::test
