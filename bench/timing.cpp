#include "timing.hpp"

#include <algorithm>

namespace bench {

CallTimer::CallTimer(GpuTimer& timer, const CacheEviction& evict) : timer_(timer), evict_(evict) {
  for (int i = 0; i < 3; ++i) {
    const tool::Stopwatch watch;
    timer_.run_ms([&](VkCommandBuffer cb) { evict_(cb); });
    eviction_ms_ = i ? std::min(eviction_ms_, watch.ms()) : watch.ms();
  }
}

std::vector<Samples> CallTimer::alternate(int reps, int warmup, const std::vector<Call>& calls) {
  std::vector<Samples> out(calls.size());
  for (int i = 0; i < warmup + reps; ++i)
    for (size_t c = 0; c < calls.size(); ++c) {
      timer_.run_ms([&](VkCommandBuffer cb) { evict_(cb); });
      ++calls_;
      const tool::Stopwatch call;
      calls[c].prepare();
      const double host = call.ms();
      const double gpu = timer_.run_ms(calls[c].record);
      const double wall = call.ms();
      if (i < warmup) continue;
      out[c].gpu_ms.push_back(gpu);
      out[c].wall_ms.push_back(wall);
      out[c].host_ms.push_back(host);
    }
  return out;
}

Times summarize(const Samples& s) {
  return {median(s.gpu_ms), minimum(s.gpu_ms), median(s.wall_ms), median(s.host_ms)};
}

std::vector<double> time_host(int reps, int warmup, const std::function<void()>& call,
                              const std::function<void()>& before) {
  std::vector<double> ms;
  for (int i = 0; i < warmup + reps; ++i) {
    if (before) before();
    const tool::Stopwatch clock;
    call();
    if (i >= warmup) ms.push_back(clock.ms());
  }
  return ms;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

double minimum(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

}  // namespace bench
