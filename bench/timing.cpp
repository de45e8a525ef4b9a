#include "timing.hpp"

#include <algorithm>

namespace bench {

Samples time_calls(GpuTimer& timer, int reps, int warmup, const std::function<void()>& prepare,
                   const std::function<void(VkCommandBuffer)>& record) {
  return time_alternating(timer, reps, warmup, {{prepare, record}}).front();
}

std::vector<Samples> time_alternating(GpuTimer& timer, int reps, int warmup, const std::vector<Call>& calls,
                                      const std::function<void(VkCommandBuffer)>& before) {
  std::vector<Samples> out(calls.size());
  for (int i = 0; i < warmup + reps; ++i)
    for (size_t c = 0; c < calls.size(); ++c) {
      if (before) timer.run_ms(before);
      const tool::Stopwatch call;
      calls[c].prepare();
      const double host = call.ms();
      const double gpu = timer.run_ms(calls[c].record);
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

std::vector<double> time_host(int reps, int warmup, const std::function<void()>& call) {
  std::vector<double> ms;
  for (int i = 0; i < warmup + reps; ++i) {
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
