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
  // On a CPU device (its caches are the host's) reads a host array 4x the largest last-level cache in
  // service today, leaving only clean lines; elsewhere records a 64 MiB device copy into cb.
  void operator()(VkCommandBuffer cb) const;

 private:
  bool host_ = false;
  std::vector<uint64_t> words_;
  std::unique_ptr<vkgmm::BufferCopy> copy_;
};

}  // namespace bench
