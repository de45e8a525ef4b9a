// measure_ceilings: the FMA ceiling (shaders/fma_ceiling.comp) and the buffer copy bandwidth. It reaches
// into the library's internals (the pipeline cache, push descriptors) to run a module of its own.
#include "probe.hpp"

#include <algorithm>
#include <optional>
#include <cstdint>
#include <functional>
#include <vector>

#include "context_impl.hpp"
#include "interface.hpp"
#include "shader_modules.hpp"
#include "operands.hpp"
#include "timers.hpp"

namespace vkgmm {

namespace {

// shaders/fma_ceiling.comp: VKGMM_CEILING_CHAINS independent chains of ITERS fmas per invocation.
constexpr uint32_t kLocalSize = 64;
constexpr uint32_t kIters = 1024;
constexpr uint32_t kChains = VKGMM_CEILING_CHAINS;
constexpr double kFlopsPerInvocation = 2.0 * kIters * kChains;

// Each measurement should last long enough that launch overhead and timer resolution do not matter,
// yet the whole probe stays near a second on lavapipe.
constexpr double kTargetSeconds = 0.1;
constexpr int kRuns = 5;

// Seconds `record` takes on the device: tool::GpuTimer's timestamps when the queue has them, else the
// host's stopwatch around the submission (which also counts the submit and wait, so it can only
// underestimate the rate).
class DeviceSeconds {
 public:
  explicit DeviceSeconds(Context& ctx) : ctx_(ctx) {
    if (ctx.info().timestamps) timer_.emplace(ctx);
  }
  double operator()(const std::function<void(VkCommandBuffer)>& record) {
    if (timer_) return timer_->run_ms(record) * 1e-3;
    const tool::Stopwatch watch;
    ctx_.submit_and_wait(record);
    return watch.seconds();
  }

 private:
  Context& ctx_;
  std::optional<tool::GpuTimer> timer_;
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

double measure_fma(Context& ctx, DeviceSeconds& seconds) {
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
  const VkDescriptorBufferInfo infos[kNumBindings] = {word, word, word, word, word, word};
  const abi::CeilingPush seed{1.0f};
  const double groups_per_second = best_rate(64, max_groups, [&](uint64_t groups) {
    const uint32_t x = static_cast<uint32_t>(std::min(groups, max_x));
    const uint32_t y = static_cast<uint32_t>((groups + x - 1) / x);
    return seconds([&](VkCommandBuffer cb) {
      bind_and_push(im, cb, pipeline, infos, &seed, sizeof seed);
      vkCmdDispatch(cb, x, y, 1);
    });
  });
  return groups_per_second * kLocalSize * kFlopsPerInvocation * 1e-9;
}

double measure_copy(Context& ctx, DeviceSeconds& seconds) {
  // Large enough to leave the caches, small enough for any device's allocation limits.
  const BufferCopy copy(ctx, 64ull << 20);
  const double bytes_per_second = best_rate(4ull << 20, copy.capacity(), [&](uint64_t bytes) {
    return seconds([&](VkCommandBuffer cb) { copy.record(cb, bytes); });
  });
  return 2.0 * bytes_per_second * 1e-9;  // each byte copied is read once and written once
}

}  // namespace

BufferCopy::BufferCopy(Context& ctx, uint64_t capacity)
    : capacity_(std::max<uint64_t>(4, capacity & ~uint64_t(3))),
      src_(ctx.create_buffer(capacity_)),
      dst_(ctx.create_buffer(capacity_)) {
  std::vector<uint8_t> fill(capacity_, 0x5a);  // touch every page before timing
  src_.upload(fill.data(), fill.size());
  dst_.upload(fill.data(), fill.size());
}

void BufferCopy::record(VkCommandBuffer cb, uint64_t bytes) const {
  for (uint64_t done = 0; done < bytes; done += capacity_) {
    const VkBufferCopy region{0, 0, std::min(capacity_, bytes - done)};
    vkCmdCopyBuffer(cb, src_.handle(), dst_.handle(), 1, &region);
  }
}

DeviceCeilings measure_ceilings(Context& ctx) {
  DeviceSeconds seconds(ctx);
  DeviceCeilings c;
  c.fma_gflops = measure_fma(ctx, seconds);
  c.copy_gbps = measure_copy(ctx, seconds);
  ContextInternals::of(ctx).log.throw_if_any();
  return c;
}

}  // namespace vkgmm
