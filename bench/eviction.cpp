#include "eviction.hpp"

#include <algorithm>
#include <thread>

namespace bench {

namespace {
// Stacked-cache parts report up to ~1 GiB of L3: 4x that would be a long read per call.
constexpr uint64_t kMaxHostBytes = 2ull << 30;
constexpr unsigned kMaxThreads = 16;
volatile uint64_t g_sink;  // keeps the reads

void read_slice(const uint64_t* words, size_t count, uint64_t* sum) {
  uint64_t s = 0;
  for (size_t i = 0; i < count; i += 8) s += words[i];  // one word per 64-byte line
  *sum = s;
}
}  // namespace

CacheEviction::CacheEviction(vkgmm::Context& ctx, const tool::CacheSize& cache) {
  const bool cpu = ctx.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  // A GPU's host array (for host() alone) is sized to the host's own cache.
  const uint64_t host_cache = cpu ? cache.bytes : std::max<uint64_t>(tool::host_cache_bytes(), 32ull << 20);
  host_bytes_ = std::min<uint64_t>(4 * host_cache, kMaxHostBytes);
  if (cpu) {
    words_.assign(std::max<uint64_t>(host_bytes_ / sizeof(uint64_t), 8), 1);
    return;
  }
  const vkgmm::StreamSize size = vkgmm::stream_size(4 * cache.bytes, vkgmm::max_probe_buffer(ctx, 1));
  read_ = std::make_unique<vkgmm::StreamingRead>(ctx, size.buffer_bytes, false);
  passes_ = size.passes;
}

uint64_t CacheEviction::bytes() const { return read_ ? read_->bytes() * passes_ : words_.size() * sizeof(uint64_t); }

void CacheEviction::operator()(VkCommandBuffer cb) const {
  if (read_) read_->record(cb, passes_);
  else host();
  ++count_;
}

void CacheEviction::host() const {
  if (words_.empty()) words_.assign(std::max<uint64_t>(host_bytes_ / sizeof(uint64_t), 8), 1);
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
  const size_t slice = (words_.size() / threads + 7) / 8 * 8;
  std::vector<uint64_t> sums(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    const size_t first = std::min(words_.size(), t * slice);
    pool.emplace_back(read_slice, words_.data() + first, std::min(slice, words_.size() - first), &sums[t]);
  }
  read_slice(words_.data(), std::min(slice, words_.size()), &sums[0]);
  for (std::thread& th : pool) th.join();
  uint64_t sum = 0;
  for (const uint64_t s : sums) sum += s;
  g_sink = sum;
}

}  // namespace bench
