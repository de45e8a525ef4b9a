#include "eviction.hpp"

#include <unistd.h>

#include <algorithm>

namespace bench {

namespace {
constexpr uint64_t kMinHostBytes = 128ull << 20;
constexpr uint64_t kMaxHostBytes = 1ull << 30;  // stacked-cache parts report up to ~1 GiB of L3
constexpr uint64_t kDeviceBytes = 64ull << 20;
volatile uint64_t g_sink;  // keeps the reads

uint64_t host_bytes() {
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);  // 0 or -1 where the C library does not know
  return std::clamp<uint64_t>(llc > 0 ? 4 * uint64_t(llc) : 0, kMinHostBytes, kMaxHostBytes);
}
}  // namespace

CacheEviction::CacheEviction(vkgmm::Context& ctx) {
  if (ctx.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    words_.assign(host_bytes() / sizeof(uint64_t), 1);
  } else {
    copy_ = std::make_unique<vkgmm::BufferCopy>(ctx, kDeviceBytes);
  }
}

void CacheEviction::operator()(VkCommandBuffer cb) const {
  if (copy_) {
    copy_->record(cb, kDeviceBytes);
    return;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < words_.size(); i += 8) sum += words_[i];  // one word per 64-byte line
  g_sink = sum;
}

}  // namespace bench
