// The device's last-level cache, as the memory probes and the bench's cache eviction size themselves by
// it: a probe that reads less than several times the cache measures the cache, and an eviction smaller
// than the cache leaves the last call's data there.
#pragma once

#include <cstdint>
#include <string>

#include "vkgmm/context.hpp"

namespace tool {

struct CacheSize {
  uint64_t bytes = 0;
  std::string source;  // how `bytes` was found, for `vkgmm info` and the bench's header
};

// What a GPU's last-level cache is taken to be: Vulkan reports no cache size (no core property, no
// extension of NVIDIA's or AMD's), so this is the largest that current GPUs have, rounded up: NVIDIA's
// H100 has 50 MB of L2, AMD's MI300X 256 MB of Infinity Cache. Sizing to more than a device has costs
// only time (a larger probe, a longer eviction), sizing to less would measure a cache.
constexpr uint64_t kGpuCacheEstimate = 256ull << 20;

// CPU devices (whose caches are the host's): the host's L3 from sysconf, else its L2. GPUs:
// kGpuCacheEstimate; an integrated one shares the host's memory and its L3 too, so the larger of the
// two. $VKGMM_CACHE_BYTES (a positive byte count) overrides either; a malformed value throws
// std::runtime_error naming it.
CacheSize last_level_cache(const vkgmm::DeviceInfo& info);

// The host's L3 (else L2) in bytes from sysconf; 0 where the C library does not know.
uint64_t host_cache_bytes();

}  // namespace tool
