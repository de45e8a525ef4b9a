// The device's last-level cache, as the memory probes and the bench's cache eviction size themselves by
// it: a probe that reads less than several times the cache measures the cache, and an eviction smaller
// than the cache leaves the last call's data there.
#pragma once

#include <cstdint>
#include <optional>
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

// The most $VKGMM_CACHE_BYTES may say: 4 GiB, above the largest caches of current parts (about 1.1 GiB
// of L3 on AMD's largest EPYC), and small enough that the probes' multiples of it (8x) stay far
// from overflowing 64 bits.
constexpr uint64_t kMaxCacheBytes = 4ull << 30;

// $VKGMM_CACHE_BYTES: nothing when unset or empty, else a byte count, decimal digits only, from 1 to
// kMaxCacheBytes; anything else throws std::runtime_error naming the variable and the range.
std::optional<uint64_t> cache_bytes_override();

// CPU devices (whose caches are the host's): the host's L3 from sysconf, else its L2. GPUs:
// kGpuCacheEstimate; an integrated one shares the host's memory and its L3 too, so the larger of the
// two. cache_bytes_override() overrides either (and throws as it does).
CacheSize last_level_cache(const vkgmm::DeviceInfo& info);

// The host's L3 (else L2) in bytes from sysconf; 0 where the C library does not know.
uint64_t host_cache_bytes();

}  // namespace tool
