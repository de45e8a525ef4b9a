// Timing calls: device time from timestamp queries, wall time and the host's share from the host clock
// (the clocks themselves are tools/timers.hpp).
#pragma once

#include <functional>
#include <vector>

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
Samples time_calls(GpuTimer& timer, int reps, int warmup, const std::function<void()>& prepare,
                   const std::function<void(VkCommandBuffer)>& record);

// One kind of call: its host part and what it records.
struct Call {
  std::function<void()> prepare;
  std::function<void(VkCommandBuffer)> record;
};
// As time_calls for several kinds of call, alternating: each round (warmup rounds included) makes one
// call of each, in order, so that a disturbance of a shared machine hits every kind alike instead of
// whichever ran during it. Samples per kind, in the order of `calls`.
// `before`, when set, is recorded and run untimed ahead of every call (e.g. evicting the caches).
std::vector<Samples> time_alternating(GpuTimer& timer, int reps, int warmup, const std::vector<Call>& calls,
                                      const std::function<void(VkCommandBuffer)>& before = {});

// The medians (and the gpu minimum) of a path's samples.
struct Times {
  double gpu_ms_median = 0, gpu_ms_min = 0, wall_ms_median = 0, host_ms_median = 0;
};
Times summarize(const Samples& s);

// Milliseconds per call of a host-only function (the CPU baseline).
std::vector<double> time_host(int reps, int warmup, const std::function<void()>& call);

double median(std::vector<double> v);
double minimum(const std::vector<double>& v);

}  // namespace bench
