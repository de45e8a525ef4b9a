// The clocks the bench measures with: device time from timestamp queries (GpuTimer) and host time
// (Stopwatch). One of each, so that every number the bench prints comes from the same clock.
#pragma once

#include <chrono>
#include <functional>

#include "vkgmm/context.hpp"

namespace tool {

// Elapsed host time since construction (or the last restart), on the monotonic clock.
class Stopwatch {
 public:
  Stopwatch() : t0_(Clock::now()) {}
  void restart() { t0_ = Clock::now(); }
  double ms() const { return std::chrono::duration<double, std::milli>(Clock::now() - t0_).count(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0_;
};

// Times what `record` records on the device, with a timestamp before and after it in the same command
// buffer. Requires DeviceInfo::timestamps (throws std::runtime_error on a device without them).
class GpuTimer {
 public:
  explicit GpuTimer(vkgmm::Context& ctx);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  // Records, submits and waits; returns the device milliseconds between the two timestamps.
  double run_ms(const std::function<void(VkCommandBuffer)>& record);

 private:
  vkgmm::Context& ctx_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
};

}  // namespace tool
