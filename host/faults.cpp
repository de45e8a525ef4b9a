// VKGMM_INJECT_FAULT and the per-Context fault switch (see faults.hpp).
#include "faults.hpp"

#include <cstdlib>

#include "context_impl.hpp"

namespace vkgmm {

namespace {

// Results a test may inject: those vkQueueSubmit and vkWaitForFences can return.
constexpr VkResult kInjectable[] = {VK_TIMEOUT,
                                    VK_ERROR_OUT_OF_HOST_MEMORY,
                                    VK_ERROR_OUT_OF_DEVICE_MEMORY,
                                    VK_ERROR_DEVICE_LOST,
                                    VK_ERROR_UNKNOWN};

}  // namespace

void parse_fault(const std::string& text, FaultPoint& point, VkResult& result) {
  if (text == "submit") {
    point = FaultPoint::submit, result = VK_ERROR_OUT_OF_HOST_MEMORY;
    return;
  }
  if (text == "timeout" || text == "wait") {
    point = FaultPoint::wait, result = VK_TIMEOUT;
    return;
  }
  if (text == "device_lost") {
    point = FaultPoint::wait, result = VK_ERROR_DEVICE_LOST;
    return;
  }
  const size_t colon = text.find(':');
  const std::string where = text.substr(0, colon);
  if (colon != std::string::npos && (where == "submit" || where == "wait")) {
    const std::string name = text.substr(colon + 1);
    for (VkResult r : kInjectable)
      if (name == vk_result_name(r)) {
        point = where == "submit" ? FaultPoint::submit : FaultPoint::wait;
        result = r;
        return;
      }
  }
  throw Error(Status::invalid_argument,
              "VKGMM_INJECT_FAULT = '" + text +
                  "': expected submit, timeout, device_lost, or submit:RESULT / wait:RESULT with RESULT one of "
                  "VK_TIMEOUT, VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_ERROR_DEVICE_LOST, "
                  "VK_ERROR_UNKNOWN");
}

void FaultInjector::configure(const std::string& text) { configured_ = text; }

void FaultInjector::arm(FaultPoint point, VkResult result, int times) {
  std::lock_guard lock(mutex_);
  armed_[static_cast<int>(point)] = {result, times};
}

VkResult FaultInjector::take(FaultPoint point) {
  // The configured text (VKGMM_INJECT_FAULT, read with the Context's options) arms one fault per Context,
  // on first use (so a bad value fails the first submission, with a message naming the variable, rather
  // than some unrelated constructor).
  std::call_once(configured_once_, [&] {
    if (configured_.empty()) return;
    FaultPoint p;
    VkResult r;
    parse_fault(configured_, p, r);
    arm(p, r, 1);
  });
  std::lock_guard lock(mutex_);
  Armed& a = armed_[static_cast<int>(point)];
  if (a.times <= 0) return VK_SUCCESS;
  --a.times;
  return a.result;
}

}  // namespace vkgmm
