// Timing calls: device time from timestamp queries, wall time and the host's share from the host clock
// (the clocks themselves are tools/timers.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "eviction.hpp"
#include "timers.hpp"
#include "vkgmm/context.hpp"

namespace bench {

using tool::GpuTimer;

// Per-call samples (milliseconds) of `reps` timed calls after `warmup` untimed ones.
//   host: `prepare` alone (for vkgmm: building the plans, i.e. validation, metadata build and upload);
//   gpu:  the recorded work between the timestamps;
//   wall: prepare + record + submit + wait, what a caller of the one-call API waits for.
struct Samples {
  std::vector<double> gpu_ms, wall_ms, host_ms;
};

// One kind of call: its host part and what it records.
struct Call {
  std::function<void()> prepare;
  std::function<void(VkCommandBuffer)> record;
};

// The bench's one way to time device calls: every call (warmup calls too) starts from evicted caches,
// the eviction run untimed just before it, and calls and evictions are counted, so that a test can see
// that none went without.
class CallTimer {
 public:
  // Times the eviction itself once (the best of 3, on the host's clock: a host read takes no device time).
  CallTimer(GpuTimer& timer, const CacheEviction& evict);
  // Several kinds of call, alternating: each round (warmup rounds included) makes one call of each, in
  // order, so that a disturbance of a shared machine hits every kind alike instead of whichever ran
  // during it. Samples per kind, in the order of `calls`.
  std::vector<Samples> alternate(int reps, int warmup, const std::vector<Call>& calls);
  Samples time(int reps, int warmup, const std::function<void()>& prepare,
               const std::function<void(VkCommandBuffer)>& record) {
    return alternate(reps, warmup, {{prepare, record}}).front();
  }
  // Calls made so far (warmup ones included), and evictions.
  uint64_t calls() const { return calls_; }
  uint64_t evictions() const { return evict_.count(); }
  const CacheEviction& eviction() const { return evict_; }
  // What one eviction takes, submission included (ms).
  double eviction_ms() const { return eviction_ms_; }
  GpuTimer& timer() { return timer_; }

 private:
  GpuTimer& timer_;
  const CacheEviction& evict_;
  uint64_t calls_ = 0;
  double eviction_ms_ = 0;
};

// The medians (and the gpu minimum) of a path's samples.
struct Times {
  double gpu_ms_median = 0, gpu_ms_min = 0, wall_ms_median = 0, host_ms_median = 0;
};
Times summarize(const Samples& s);

// Milliseconds per call of a host-only function (the CPU baseline), `before` run untimed ahead of each.
std::vector<double> time_host(int reps, int warmup, const std::function<void()>& call,
                              const std::function<void()>& before = {});

double median(std::vector<double> v);
double minimum(const std::vector<double>& v);

}  // namespace bench
