// Test-only fault injection: make a Context's next submission or wait fail as if the driver had returned
// an error, so the error paths (bounded waits, device loss, recovery) run on any device, lavapipe included.
// Internal: the tests reach it through the Context's internals; the CLI and other programs through the
// environment variable VKGMM_INJECT_FAULT (read with the Context's options, armed on its first submission).
#pragma once

#include <vulkan/vulkan.h>

#include <mutex>
#include <string>

namespace vkgmm {

enum class FaultPoint {
  submit,  // vkQueueSubmit is not called; the injected result is returned instead (nothing runs)
  wait,    // the work is submitted; its vkWaitForFences returns the injected result instead
};

class FaultInjector {
 public:
  // A VKGMM_INJECT_FAULT value ("" = none), parsed and armed on the first take() (before any thread
  // submits: the Context sets it when it is made).
  void configure(const std::string& text);
  // The next `times` calls at `point` fail with `result`.
  void arm(FaultPoint point, VkResult result, int times = 1);
  // VK_SUCCESS when nothing is armed at `point`, else the injected result (one use consumed).
  VkResult take(FaultPoint point);

 private:
  struct Armed {
    VkResult result = VK_SUCCESS;
    int times = 0;
  };
  std::string configured_;
  std::once_flag configured_once_;
  std::mutex mutex_;
  Armed armed_[2];
};

// Parses a VKGMM_INJECT_FAULT value: "submit" (vkQueueSubmit fails with VK_ERROR_OUT_OF_HOST_MEMORY),
// "timeout" (the wait returns VK_TIMEOUT), "device_lost" (the wait returns VK_ERROR_DEVICE_LOST), or
// "submit:VK_..." / "wait:VK_..." for any other result. Throws Error(invalid_argument) on anything else.
void parse_fault(const std::string& text, FaultPoint& point, VkResult& result);

}  // namespace vkgmm
