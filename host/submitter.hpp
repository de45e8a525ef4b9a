// Submitting work and what keeps it safe when the device misbehaves (internal; a part of
// Context::Impl): bounded waits, failed submissions that leave the context usable, device loss reported
// once and then refused fast, and work that outlived its wait kept alive until the device is done with
// it, together with the buffers destroyed meanwhile.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

#include "device.hpp"
#include "faults.hpp"

namespace vkgmm {

// A vkgmm buffer's Vulkan objects, destroyed together.
struct DeadBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBufferView texel_views[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
};

class Submitter {
 public:
  explicit Submitter(const Device& device) : dev_(device) {}
  // Records with `record` into a one-time command buffer of a transient pool of this call's own (no
  // lock held while recording), submits it and waits, bounded by the options' timeout.
  void submit_and_wait(const std::function<void(VkCommandBuffer)>& record);
  // Destroys the buffer's objects now, or once the parked submissions are done.
  void retire(const DeadBuffer& buffer);
  // Waits (bounded) for every parked submission; false if some still run.
  bool settle();
  bool lost() const { return lost_; }
  // Whether any work reached vkQueueSubmit on this context.
  bool submitted_any() const { return submitted_any_; }
  // Whether nothing waits for the device to finish (no parked work, no retired buffers).
  bool idle();
  FaultInjector faults;  // test-only (faults.hpp)

 private:
  void reap_locked();  // frees what the parked submissions no longer use (mutex_ held)
  void destroy_now(const DeadBuffer& buffer) const;
  [[noreturn]] void throw_lost(const char* what);

  const Device& dev_;
  // Guards the queue, pending_ and graveyard_.
  std::mutex mutex_;
  struct Pending {
    VkCommandPool pool;  // holds the submission's command buffer
    VkFence fence;
  };
  std::vector<Pending> pending_;
  std::vector<DeadBuffer> graveyard_;
  std::atomic<bool> lost_{false};  // VK_ERROR_DEVICE_LOST was seen: later submissions fail at once
  // Some work reached vkQueueSubmit; a Context that never submitted does not wait for its device at
  // teardown (work an app recorded from its plans and submitted itself is the app's to wait for).
  std::atomic<bool> submitted_any_{false};
};

}  // namespace vkgmm
