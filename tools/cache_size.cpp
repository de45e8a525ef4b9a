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

CacheSize last_level_cache(const vkgmm::DeviceInfo& info) {
  if (const char* env = std::getenv("VKGMM_CACHE_BYTES"); env && *env) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(env, &end, 10);
    if (*end != '\0' || bytes == 0 || env[0] == '-')
      throw std::runtime_error(std::string("VKGMM_CACHE_BYTES=") + env + ": not a positive number of bytes");
    return {bytes, "VKGMM_CACHE_BYTES"};
  }
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
