#include "eviction.hpp"

#include "context_impl.hpp"  // the device type

namespace bench {

namespace {
constexpr uint64_t kHostBytes = 128ull << 20;
constexpr uint64_t kDeviceBytes = 64ull << 20;
volatile uint64_t g_sink;  // keeps the reads
}  // namespace

CacheEviction::CacheEviction(vkgmm::Context& ctx) {
  host_ = vkgmm::ContextInternals::of(ctx).dev.info.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (host_) {
    words_.assign(kHostBytes / sizeof(uint64_t), 1);
  } else {
    copy_ = std::make_unique<vkgmm::BufferCopy>(ctx, kDeviceBytes);
  }
}

void CacheEviction::operator()(VkCommandBuffer cb) const {
  if (!host_) {
    copy_->record(cb, kDeviceBytes);
    return;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < words_.size(); i += 8) sum += words_[i];  // one word per 64-byte line
  g_sink = sum;
}

}  // namespace bench
