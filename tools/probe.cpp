// measure_ceilings: the FMA ceiling (shaders/fma_ceiling.comp), the streaming read bandwidth
// (shaders/read_ceiling.comp) and the buffer copy bandwidth. It runs the library's probe modules through
// vkgmm/internals.hpp (their pipelines, push descriptors, a buffer's texel view, the memory vkgmm's
// buffers live in), as vkgmm's own dispatches run.
#include "probe.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "timers.hpp"
#include "vkgmm/internals.hpp"

namespace vkgmm {

namespace {

// shaders/fma_ceiling.comp: CHAINS independent chains of ITERS fmas per invocation, the best of several
// counts: how many a device needs in flight differs. On lavapipe (2 cores, one run) 8 chains read 34
// GFLOP/s, 16 read 46, 32 read 51 and 64 read 36 to 52; with 16 alone, a 2-core Xeon host read 24.2
// GFLOP/s while gmm itself ran at 29.3.
// Each count runs kFmasPerInvocation / CHAINS iterations, so every invocation does the same work and
// stays far inside CPU drivers' loop budget (kCpuLoopIterations) even where the chains are not unrolled.
constexpr uint32_t kLocalSize = 64;
constexpr uint32_t kFmasPerInvocation = 16384;
constexpr uint32_t kChainCounts[] = {16, 32, 64};
static_assert(kFmasPerInvocation < internals::kCpuLoopIterations, "the chains, not unrolled, must fit the loop budget");

// Each FMA measurement should last long enough that launch overhead and timer resolution do not matter,
// yet each chain count's stays near a second on lavapipe.
constexpr double kTargetSeconds = 0.1;
constexpr int kRuns = 5;
// The memory probes' runs are already long (8x the cache each): the best of fewer.
constexpr int kMemoryRuns = 3;

// shaders/read_ceiling.comp: invocations per workgroup (at most the device's, a power of two), vectors
// each loads per iteration (its UNROLL), workgroups per compute unit (enough for a GPU to keep its memory
// busy: 8 x 256 invocations per SM on NVIDIA's, half of what one runs at once).
constexpr uint32_t kReadLanes = 256;
constexpr uint32_t kReadUnroll = 4;
constexpr uint32_t kReadGroupsPerUnit = 8;
// The out words' passes: a run of more passes reuses them (reads of the same data, the same sums).
constexpr uint32_t kReadOutPasses = 16;
// Iterations of one invocation's loop per dispatch, within CPU drivers' loop budget with room to spare.
constexpr uint64_t kReadRoundsPerDispatch = internals::kCpuLoopIterations / 4;

constexpr uint64_t kGiB = 1ull << 30;

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

double shortest(int runs, const std::function<double()>& run) {
  double best = run();
  for (int i = 1; i < runs; ++i) best = std::min(best, run());
  return std::max(best, 1e-9);
}

// The FMA rate of `chains` chains per invocation, GFLOP/s.
double measure_fma(Context& ctx, DeviceSeconds& seconds, uint32_t chains) {
  const DeviceInfo& info = ctx.info();
  const VkPipeline pipeline = internals::fma_ceiling_pipeline(ctx, kLocalSize, kFmasPerInvocation / chains, chains);
  // Workgroups spread over x (and y beyond x's limit); each x column writes its own words, so the buffer
  // needs one word per invocation of a row. Rows past the first rewrite the same words: harmless.
  const uint64_t max_x = std::min<uint64_t>(info.max_workgroup_count[0], 65535);
  const uint64_t max_groups = max_x * std::min<uint64_t>(info.max_workgroup_count[1], 65535);
  Buffer out = ctx.create_buffer(max_x * kLocalSize * sizeof(uint32_t));
  const VkDescriptorBufferInfo word{out.handle(), 0, out.size()};
  const VkDescriptorBufferInfo infos[internals::kPlainBindings] = {word, word, word, word, word, word};
  const internals::FmaCeilingPush seed{1.0f};
  const double groups_per_second = best_rate(64, max_groups, [&](uint64_t groups) {
    const uint32_t x = static_cast<uint32_t>(std::min(groups, max_x));
    const uint32_t y = static_cast<uint32_t>((groups + x - 1) / x);
    return seconds([&](VkCommandBuffer cb) {
      internals::bind_and_push(ctx, cb, pipeline, infos, internals::kPlainBindings, &seed, sizeof seed);
      vkCmdDispatch(cb, x, y, 1);
    });
  });
  return groups_per_second * kLocalSize * (2.0 * (kFmasPerInvocation / chains) * chains) * 1e-9;
}

// Every word of the probes' buffers (fill).
constexpr uint32_t kFillWord = 0x01010101u;

// Fills a buffer on the device: every page touched before anything is timed, without a host copy of it.
void fill(Context& ctx, const Buffer& b) {
  ctx.submit_and_wait([&](VkCommandBuffer cb) { vkCmdFillBuffer(cb, b.handle(), 0, VK_WHOLE_SIZE, kFillWord); });
}

void measure_memory(Context& ctx, DeviceSeconds& seconds, DeviceCeilings& c) {
  c.cache = tool::last_level_cache(ctx.info());
  const uint64_t want = memory_probe_bytes(ctx.info(), c.cache.bytes);
  c.read_size = stream_size(want, max_probe_buffer(ctx, 1));
  // The faster of the two ways a shader reads a buffer on this device: that is how fast it streams.
  std::vector<bool> paths = {false};
  if (StreamingRead::texel_usable(ctx, c.read_size.buffer_bytes)) paths.insert(paths.begin(), true);
  for (const bool texel : paths) {
    const StreamingRead read(ctx, c.read_size.buffer_bytes, texel);
    const double s = shortest(kMemoryRuns, [&] {
      return seconds([&](VkCommandBuffer cb) { read.record(cb, c.read_size.passes); });
    });
    read.check();
    const double gbps = double(c.read_size.run_bytes()) / s * 1e-9;
    if (gbps > c.read_gbps) {
      c.read_gbps = gbps;
      c.read_path = texel ? "texel view" : "storage buffer";
    }
  }
  c.copy_size = stream_size(want, max_probe_buffer(ctx, 2));
  const BufferCopy copy(ctx, c.copy_size.buffer_bytes);
  const double s = shortest(kMemoryRuns, [&] {
    return seconds([&](VkCommandBuffer cb) { copy.record(cb, c.copy_size.run_bytes()); });
  });
  c.copy_gbps = 2.0 * double(c.copy_size.run_bytes()) / s * 1e-9;  // each byte copied is read and written
}

}  // namespace

BufferCopy::BufferCopy(Context& ctx, uint64_t capacity)
    : capacity_(std::max<uint64_t>(4, capacity & ~uint64_t(3))),
      src_(ctx.create_buffer(capacity_)),
      dst_(ctx.create_buffer(capacity_)) {
  fill(ctx, src_);
  fill(ctx, dst_);
}

void BufferCopy::record(VkCommandBuffer cb, uint64_t bytes) const {
  for (uint64_t done = 0; done < bytes; done += capacity_) {
    const VkBufferCopy region{0, 0, std::min(capacity_, bytes - done)};
    vkCmdCopyBuffer(cb, src_.handle(), dst_.handle(), 1, &region);
  }
}

bool StreamingRead::texel_usable(const Context& ctx, uint64_t bytes) {
  const DeviceInfo& info = ctx.info();
  // vkgmm gives its buffers texel views on CPU devices only (host/texel_views.hpp); one view reaches
  // maxTexelBufferElements texels, and the shader indexes them with an int.
  const uint64_t texels = bytes / 16;
  return info.type == VK_PHYSICAL_DEVICE_TYPE_CPU && info.texel_loads_32bit &&
         texels <= info.max_texel_buffer_elements && texels <= uint64_t(INT32_MAX);
}

StreamingRead::StreamingRead(Context& ctx, uint64_t bytes, bool texel)
    : ctx_(ctx), bytes_(std::max<uint64_t>(256, bytes & ~uint64_t(255))), texel_(texel) {
  const DeviceInfo& info = ctx.info();
  if (texel && !texel_usable(ctx, bytes_))
    throw std::runtime_error("read probe: no texel view reads a buffer of " + std::to_string(bytes_) +
                             " bytes on this device");
  uint32_t lanes = kReadLanes;
  while (lanes > info.max_workgroup_invocations) lanes /= 2;
  workgroups_ = std::max<uint32_t>(1, info.compute_units) * kReadGroupsPerUnit;
  workgroups_ = std::min<uint32_t>(workgroups_, std::min<uint32_t>(info.max_workgroup_count[0], 65535));
  // A window: what one binding reaches (texel views reach the whole buffer), within the loop budget and
  // 32-bit counts; its start a multiple of 256 bytes, which every offset alignment divides.
  uint64_t window = uint64_t(kReadRoundsPerDispatch) * kReadUnroll * lanes * workgroups_ * 16;
  if (!texel) window = std::min<uint64_t>(window, info.max_storage_buffer_range);
  window = std::min<uint64_t>(window, uint64_t(UINT32_MAX) * 16) & ~uint64_t(255);
  window_vectors_ = window / 16;
  windows_ = static_cast<uint32_t>((bytes_ + window - 1) / window);
  pipeline_ = internals::read_ceiling_pipeline(ctx, texel, lanes);
  data_ = ctx.create_buffer(bytes_);
  out_ = ctx.create_buffer(uint64_t(kReadOutPasses) * windows_ * workgroups_ * sizeof(uint32_t));
  fill(ctx, data_);
  if (texel) {
    view_ = internals::texel_view(ctx, data_);
    if (!view_) throw std::runtime_error("read probe: the buffer has no texel view");
  }
}

void StreamingRead::record(VkCommandBuffer cb, uint32_t passes) const {
  const uint64_t total = bytes_ / 16;
  const VkDescriptorBufferInfo out{out_.handle(), 0, VK_WHOLE_SIZE};
  const VkBufferView texels[2] = {view_, view_};
  for (uint32_t p = 0; p < passes; ++p)
    for (uint32_t w = 0; w < windows_; ++w) {
      const uint64_t first = w * window_vectors_;
      const uint64_t count = std::min(window_vectors_, total - first);
      // The storage build reads its window from the binding's start; the texel build (whose storage
      // binding only has to be valid) counts texels from the buffer's start.
      const VkDescriptorBufferInfo data{data_.handle(), texel_ ? 0 : first * 16,
                                        texel_ ? std::min<uint64_t>(bytes_, ctx_.info().max_storage_buffer_range)
                                               : count * 16};
      const VkDescriptorBufferInfo infos[internals::kPlainBindings] = {data, out, out, out, out, out};
      const internals::ReadCeilingPush push{texel_ ? uint32_t(first) : 0u, uint32_t(count),
                                            ((p % kReadOutPasses) * windows_ + w) * workgroups_};
      internals::bind_and_push(ctx_, cb, pipeline_, infos, internals::kPlainBindings, &push, sizeof push,
                               texel_ ? texels : nullptr);
      vkCmdDispatch(cb, workgroups_, 1, 1);
    }
}

void StreamingRead::check() const {
  const uint64_t total = bytes_ / 16;
  std::vector<uint32_t> words(size_t(windows_) * workgroups_);
  out_.download(words.data(), words.size() * sizeof(uint32_t));  // the first pass's words
  for (uint32_t w = 0; w < windows_; ++w) {
    const uint64_t vectors = std::min(window_vectors_, total - w * window_vectors_);
    uint32_t got = 0;
    for (uint32_t g = 0; g < workgroups_; ++g) got += words[size_t(w) * workgroups_ + g];
    const uint32_t want = static_cast<uint32_t>(vectors * 4 * kFillWord);  // mod 2^32, as the shader adds
    if (got != want)
      throw std::runtime_error("read probe: window " + std::to_string(w) + "'s workgroups read other than its " +
                               std::to_string(vectors) + " vectors once each (their words add up to " +
                               std::to_string(got) + ", not " + std::to_string(want) + ")");
  }
}

StreamSize stream_size(uint64_t want, uint64_t max_buffer) {
  max_buffer &= ~uint64_t(255);
  if (max_buffer == 0) throw std::runtime_error("memory probe: no memory for a buffer");
  want = std::max<uint64_t>(want, 256);
  StreamSize s;
  s.passes = static_cast<uint32_t>((want + max_buffer - 1) / max_buffer);
  s.buffer_bytes = ((want + s.passes - 1) / s.passes + 255) & ~uint64_t(255);
  return s;
}

uint64_t memory_probe_bytes(const DeviceInfo& info, uint64_t cache_bytes) {
  // Saturating: a cache size is bounded where it is read (tool::kMaxCacheBytes), but a wrapped product
  // would silently size the probe to almost nothing.
  const uint64_t eight = cache_bytes > UINT64_MAX / 8 ? UINT64_MAX : 8 * cache_bytes;
  return info.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? eight : std::max(eight, kGiB);
}

uint64_t max_probe_buffer(const Context& ctx, uint32_t count) {
  const uint32_t type = internals::buffer_memory_type(ctx, ~0u);
  if (type == UINT32_MAX) throw std::runtime_error("memory probe: no host-visible memory type");
  const VkPhysicalDevice physical = internals::physical_device(ctx);
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  const uint64_t heap = memory.memoryHeaps[memory.memoryTypes[type].heapIndex].size;
  uint64_t most = heap / (2 * std::max<uint32_t>(count, 1));
  if (const uint64_t m = internals::max_allocation(ctx); m) most = std::min(most, m);
  return most & ~uint64_t(255);
}

DeviceCeilings measure_ceilings(Context& ctx) {
  DeviceSeconds seconds(ctx);
  DeviceCeilings c;
  for (const uint32_t chains : kChainCounts) c.fma_gflops = std::max(c.fma_gflops, measure_fma(ctx, seconds, chains));
  measure_memory(ctx, seconds, c);
  internals::throw_validation_messages(ctx);
  return c;
}

}  // namespace vkgmm
