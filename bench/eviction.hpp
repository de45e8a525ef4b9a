// Evicting the caches before each timed call, so that every call starts as a model's layer does in a
// decode step: its weights last touched a whole pass of other layers ago, in no cache. Without it,
// whichever call ran after another reading the same weights found them in the last-level cache (lavapipe:
// the host's, 320 MiB here, where decode's 32 MiB of weights stayed between reps and read at 128 % of
// the copy bandwidth) and looked up to 2x faster.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cache_size.hpp"
#include "probe.hpp"
#include "vkgmm/context.hpp"

namespace bench {

class CacheEviction {
 public:
  CacheEviction(vkgmm::Context& ctx, const tool::CacheSize& cache);
  // On a CPU device (its caches are the host's) reads a host array of 4x the last-level cache (at most
  // kMaxHostBytes), which leaves only clean lines there: a device copy would leave written ones that the
  // next call pays to write back (ids-decode 3.1 ms instead of 1.7). One thread per core reads a slice,
  // so the private caches of the driver's worker cores are read over too. Elsewhere records into cb a
  // streaming read (vkgmm::StreamingRead, clean lines again) of 4x the cache estimate.
  void operator()(VkCommandBuffer cb) const;
  // Reads the host array alone (allocated on first use on a GPU): before a call that runs on the host.
  void host() const;
  // Evictions before device calls so far (operator()).
  uint64_t count() const { return count_; }
  // What one eviction reads, and how ("host read" or "device read").
  uint64_t bytes() const;
  const char* kind() const { return read_ ? "device read" : "host read"; }

 private:
  uint64_t host_bytes_;
  mutable std::vector<uint64_t> words_;          // the host array
  std::unique_ptr<vkgmm::StreamingRead> read_;   // a GPU: the device read
  uint32_t passes_ = 0;
  mutable uint64_t count_ = 0;
};

}  // namespace bench
