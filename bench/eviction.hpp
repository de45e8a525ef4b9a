// Evicting the caches before each timed call, so that every kind of call starts as a model's layer does in
// a decode step: its weights last touched a whole pass of other layers ago, in no cache. Without it,
// whichever call ran after another reading the same weights found them in the last-level cache (lavapipe:
// the host's, 32 MiB here, larger than a decode call's 20 MiB of experts) and looked up to 2x faster.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "probe.hpp"
#include "vkgmm/context.hpp"

namespace bench {

class CacheEviction {
 public:
  explicit CacheEviction(vkgmm::Context& ctx);
  // On a CPU device (its caches are the host's) reads a host array of 4x the host's last-level cache,
  // 128 MiB to 1 GiB, which leaves only clean lines there: a device copy would leave written ones that
  // the next call pays to write back (ids-decode 3.1 ms instead of 1.7). It runs on the calling thread:
  // lines in the private caches of the driver's worker cores (1 MiB each here) may survive. Elsewhere
  // records a 64 MiB device copy into cb, which need not evict caches of 128 MiB and more.
  void operator()(VkCommandBuffer cb) const;

 private:
  std::vector<uint64_t> words_;              // a CPU device: the host array
  std::unique_ptr<vkgmm::BufferCopy> copy_;  // any other
};

}  // namespace bench
