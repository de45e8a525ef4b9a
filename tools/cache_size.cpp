#include "cache_size.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace tool {

uint64_t host_cache_bytes() {
  // Each is 0 or -1 where the C library does not know.
  for (const int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
    if (const long bytes = sysconf(name); bytes > 0) return uint64_t(bytes);
  return 0;
}

std::optional<uint64_t> cache_bytes_override() {
  const char* env = std::getenv("VKGMM_CACHE_BYTES");
  if (!env || !*env) return std::nullopt;
  // Digits only: strtoull would take " 5", "+5" and "-5" (as 2^64 - 5) and wrap past 2^64 unseen.
  uint64_t bytes = 0;
  bool ok = true;
  for (const char* c = env; *c && ok; ++c) {
    ok = *c >= '0' && *c <= '9' && bytes <= (kMaxCacheBytes - uint64_t(*c - '0')) / 10;
    if (ok) bytes = bytes * 10 + uint64_t(*c - '0');
  }
  if (!ok || bytes == 0)
    throw std::runtime_error(std::string("VKGMM_CACHE_BYTES=") + env + ": expected a whole number of bytes from 1 to " +
                             std::to_string(kMaxCacheBytes) + " (4 GiB, past any device's last-level cache)");
  return bytes;
}

CacheSize last_level_cache(const vkgmm::DeviceInfo& info) {
  if (const std::optional<uint64_t> bytes = cache_bytes_override()) return {*bytes, "VKGMM_CACHE_BYTES"};
  const uint64_t host = host_cache_bytes();
  if (info.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // Without sysconf's figure: 32 MiB, a server part's L3, said as such.
    if (host == 0) return {32ull << 20, "assumed: sysconf reports no host cache"};
    return {host, "the host's, from sysconf"};
  }
  if (info.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU && host > kGpuCacheEstimate)
    return {host, "the host's, from sysconf: an integrated GPU shares it"};
  return {kGpuCacheEstimate, "an estimate: Vulkan reports none; the largest of current GPUs'"};
}

}  // namespace tool
