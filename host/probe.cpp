// measure_ceilings: the FMA ceiling (shaders/fma_ceiling.comp) and the buffer copy bandwidth.
#include "vkgmm/probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "context_impl.hpp"
#include "interface.hpp"
#include "shader_modules.hpp"
#include "operands.hpp"


namespace vkgmm {

namespace {

// Mirrors shaders/fma_ceiling.comp: CHAINS independent chains of ITERS fmas per invocation.
constexpr uint32_t kLocalSize = 64;
constexpr uint32_t kIters = 1024;
constexpr uint32_t kChains = 16;
constexpr double kFlopsPerInvocation = 2.0 * kIters * kChains;

// Each measurement should last long enough that launch overhead and timer resolution do not matter,
// yet the whole probe stays near a second on lavapipe.
constexpr double kTargetSeconds = 0.1;
constexpr int kRuns = 5;

// Seconds `record` takes on the device: timestamps around it when the queue has them, else the host's
// clock around the submission (which also counts the submit and wait, so it can only underestimate).
class Stopwatch {
 public:
  explicit Stopwatch(Context& ctx) : ctx_(ctx) {
    const DeviceInfo& info = ctx.info();
    if (!info.timestamps) return;
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    check_vk(vkCreateQueryPool(ctx.device(), &qi, nullptr, &pool_), "vkCreateQueryPool");
    period_ns_ = info.timestamp_period_ns;
  }
  ~Stopwatch() {
    if (pool_) vkDestroyQueryPool(ctx_.device(), pool_, nullptr);
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

  double seconds(const std::function<void(VkCommandBuffer)>& record) {
    const auto t0 = std::chrono::steady_clock::now();
    ctx_.submit_and_wait([&](VkCommandBuffer cb) {
      if (pool_) {
        vkCmdResetQueryPool(cb, pool_, 0, 2);
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
      }
      record(cb);
      if (pool_) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
    });
    const auto t1 = std::chrono::steady_clock::now();
    if (!pool_) return std::chrono::duration<double>(t1 - t0).count();
    uint64_t ticks[2] = {0, 0};
    check_vk(vkGetQueryPoolResults(ctx_.device(), pool_, 0, 2, sizeof ticks, ticks, sizeof(uint64_t),
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    return double(ticks[1] - ticks[0]) * period_ns_ * 1e-9;
  }

 private:
  Context& ctx_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  double period_ns_ = 1;
};

// Grows the work until one run lasts about kTargetSeconds, then keeps the best of kRuns.
// `run(units)` returns the seconds for `units` of work; the result is units per second.
double best_rate(uint64_t units, uint64_t max_units, const std::function<double(uint64_t)>& run) {
  for (;;) {
    const double t = run(units);
    if (t >= kTargetSeconds * 0.5 || units >= max_units) break;
    const double scale = t > 0 ? kTargetSeconds / t : 16.0;
    units = std::min<uint64_t>(max_units, static_cast<uint64_t>(double(units) * std::clamp(scale, 2.0, 16.0)));
  }
  double best = 0;
  for (int i = 0; i < kRuns; ++i) best = std::max(best, double(units) / std::max(run(units), 1e-9));
  return best;
}

double measure_fma(Context& ctx, Stopwatch& watch) {
  Context::Impl& im = ContextInternals::of(ctx);
  const DeviceInfo& info = ctx.info();
  const ShaderCode code = fma_ceiling_shader();
  std::vector<uint32_t> constants(VKGMM_ID_CEILING_ITERS + 1);
  constants[VKGMM_ID_INVOCATIONS] = kLocalSize;
  constants[VKGMM_ID_CEILING_ITERS] = kIters;
  const VkPipeline pipeline = im.pipeline(code.code, code.words, constants);
  // Workgroups spread over x (and y beyond x's limit); each x column writes its own words, so the buffer
  // needs one word per invocation of a row. Rows past the first rewrite the same words: harmless.
  const uint64_t max_x = std::min<uint64_t>(info.max_workgroup_count[0], 65535);
  const uint64_t max_groups = max_x * std::min<uint64_t>(info.max_workgroup_count[1], 65535);
  Buffer out = ctx.create_buffer(max_x * kLocalSize * sizeof(uint32_t));
  const VkDescriptorBufferInfo word{out.handle(), 0, out.size()};
  const VkDescriptorBufferInfo infos[kNumBindings] = {word, word, word, word, word};
  const abi::CeilingPush seed{1.0f};
  const double groups_per_second = best_rate(64, max_groups, [&](uint64_t groups) {
    const uint32_t x = static_cast<uint32_t>(std::min(groups, max_x));
    const uint32_t y = static_cast<uint32_t>((groups + x - 1) / x);
    return watch.seconds([&](VkCommandBuffer cb) {
      bind_and_push(im, cb, pipeline, infos, &seed, sizeof seed);
      vkCmdDispatch(cb, x, y, 1);
    });
  });
  return groups_per_second * kLocalSize * kFlopsPerInvocation * 1e-9;
}

double measure_copy(Context& ctx, Stopwatch& watch) {
  // Large enough to leave the caches, small enough for any device's allocation limits.
  const uint64_t max_bytes = 64ull << 20;
  Buffer src = ctx.create_buffer(max_bytes), dst = ctx.create_buffer(max_bytes);
  std::vector<uint8_t> fill(max_bytes, 0x5a);  // touch every page before timing
  src.upload(fill.data(), fill.size());
  dst.upload(fill.data(), fill.size());
  const double bytes_per_second = best_rate(4ull << 20, max_bytes, [&](uint64_t bytes) {
    return watch.seconds([&](VkCommandBuffer cb) {
      const VkBufferCopy region{0, 0, bytes};
      vkCmdCopyBuffer(cb, src.handle(), dst.handle(), 1, &region);
    });
  });
  return 2.0 * bytes_per_second * 1e-9;  // each byte copied is read once and written once
}

}  // namespace

DeviceCeilings measure_ceilings(Context& ctx) {
  Stopwatch watch(ctx);
  DeviceCeilings c;
  c.fma_gflops = measure_fma(ctx, watch);
  c.copy_gbps = measure_copy(ctx, watch);
  ContextInternals::of(ctx).log.throw_if_any();
  return c;
}

}  // namespace vkgmm
