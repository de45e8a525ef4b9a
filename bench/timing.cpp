#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace bench {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}
}  // namespace

GpuTimer::GpuTimer(vkgmm::Context& ctx) : ctx_(ctx) {
  if (!ctx.info().timestamps)
    throw std::runtime_error("the device's queue has no timestamp queries: the bench cannot time kernels");
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  check(vkCreateQueryPool(ctx.device(), &qi, nullptr, &pool_), "vkCreateQueryPool");
}

GpuTimer::~GpuTimer() { vkDestroyQueryPool(ctx_.device(), pool_, nullptr); }

double GpuTimer::run_ms(const std::function<void(VkCommandBuffer)>& record) {
  ctx_.submit_and_wait([&](VkCommandBuffer cb) {
    vkCmdResetQueryPool(cb, pool_, 0, 2);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
    record(cb);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
  });
  uint64_t ticks[2] = {0, 0};
  check(vkGetQueryPoolResults(ctx_.device(), pool_, 0, 2, sizeof ticks, ticks, sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  return double(ticks[1] - ticks[0]) * double(ctx_.info().timestamp_period_ns) * 1e-6;
}

Samples time_calls(GpuTimer& timer, int reps, int warmup, const std::function<void()>& prepare,
                   const std::function<void(VkCommandBuffer)>& record) {
  Samples s;
  for (int i = 0; i < warmup + reps; ++i) {
    const auto t0 = Clock::now();
    prepare();
    const double host = ms_since(t0);
    const double gpu = timer.run_ms(record);
    const double wall = ms_since(t0);
    if (i < warmup) continue;
    s.gpu_ms.push_back(gpu);
    s.wall_ms.push_back(wall);
    s.host_ms.push_back(host);
  }
  return s;
}

std::vector<double> time_host(int reps, int warmup, const std::function<void()>& call) {
  std::vector<double> ms;
  for (int i = 0; i < warmup + reps; ++i) {
    const auto t0 = Clock::now();
    call();
    if (i >= warmup) ms.push_back(ms_since(t0));
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
