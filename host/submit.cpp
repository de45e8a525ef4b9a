// Context::submit_and_wait and what keeps it safe when the device misbehaves: bounded waits, failed
// submissions that leave the context usable, device loss reported once and then refused fast, and work
// that outlived its wait (a timeout) kept alive until the device is done with it.
#include <string>

#include "context_impl.hpp"

namespace vkgmm {

namespace {

uint64_t to_ns(double seconds) { return static_cast<uint64_t>(seconds * 1e9); }

[[noreturn]] void throw_lost(const char* what) {
  throw Error(Status::device_lost, std::string("submit_and_wait: ") + what +
                                       " (VK_ERROR_DEVICE_LOST): the device is lost; create a new Context");
}

}  // namespace

void Context::Impl::reap_pending_locked() {
  for (size_t i = 0; i < pending.size();) {
    const VkResult r = vkGetFenceStatus(device, pending[i].fence);
    // After device loss every command counts as complete for destruction (Vulkan spec, "Lost Device").
    if (r == VK_SUCCESS || r == VK_ERROR_DEVICE_LOST) {
      if (r == VK_ERROR_DEVICE_LOST) lost = true;
      vkDestroyFence(device, pending[i].fence, nullptr);
      vkDestroyCommandPool(device, pending[i].pool, nullptr);  // frees its command buffer
      pending[i] = pending.back();
      pending.pop_back();
    } else {
      ++i;
    }
  }
  if (!pending.empty()) return;
  for (const Grave& g : graveyard) destroy_now(g);
  graveyard.clear();
}

bool Context::Impl::settle_pending() {
  std::lock_guard lock(queue_mutex);
  for (const Pending& p : pending) {
    const VkResult r = vkWaitForFences(device, 1, &p.fence, VK_TRUE, to_ns(options.timeout_s));
    if (r == VK_ERROR_DEVICE_LOST) lost = true;
  }
  reap_pending_locked();
  return pending.empty();
}

void Context::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) {
  Impl& im = *impl_;
  if (!im.queue)
    throw Error(Status::invalid_argument, "submit_and_wait: the context wraps a device without a queue "
                                          "(BorrowedDevice.queue is null): record into your own command buffer");
  if (im.lost) throw_lost("the device was lost by an earlier submission");
  VkDevice dev = im.device;
  {
    std::lock_guard lock(im.queue_mutex);
    im.reap_pending_locked();
  }
  // A transient pool of this call's own: recording needs no lock, so concurrent callers record in
  // parallel and a callback may create or destroy vkgmm objects (which take the queue lock).
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  cp.queueFamilyIndex = im.queue_family;
  check_vk(vkCreateCommandPool(dev, &cp, nullptr, &pool), "submit_and_wait: vkCreateCommandPool");
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool submitted = false;
  try {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check_vk(vkAllocateCommandBuffers(dev, &ai, &cb), "submit_and_wait: vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check_vk(vkBeginCommandBuffer(cb, &bi), "submit_and_wait: vkBeginCommandBuffer");
    record(cb);
    check_vk(vkEndCommandBuffer(cb), "submit_and_wait: vkEndCommandBuffer");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check_vk(vkCreateFence(dev, &fi, nullptr, &fence), "submit_and_wait: vkCreateFence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    {
      std::lock_guard lock(im.queue_mutex);
      VkResult r = im.faults.take(FaultPoint::submit);
      if (r == VK_SUCCESS) r = vkQueueSubmit(im.queue, 1, &si, fence);
      if (r == VK_ERROR_DEVICE_LOST) im.lost = true;
      check_vk(r, "submit_and_wait: vkQueueSubmit");
      submitted = true;
    }
    const double timeout = im.options.timeout_s;
    VkResult r = vkWaitForFences(dev, 1, &fence, VK_TRUE, to_ns(timeout));
    if (const VkResult injected = im.faults.take(FaultPoint::wait); injected != VK_SUCCESS) r = injected;
    if (r == VK_TIMEOUT)
      throw Error(Status::device_lost,
                  "submit_and_wait: vkWaitForFences returned VK_TIMEOUT after " + std::to_string(timeout) +
                      " s (ContextOptions::timeout_s, VKGMM_TIMEOUT_S): the device may be hung; the work stays queued and later "
                      "submissions run after it");
    if (r == VK_ERROR_DEVICE_LOST) {
      im.lost = true;
      throw_lost("vkWaitForFences failed");
    }
    check_vk(r, "submit_and_wait: vkWaitForFences");
  } catch (...) {
    std::lock_guard lock(im.queue_mutex);
    if (submitted && vkGetFenceStatus(dev, fence) == VK_NOT_READY) {
      // Still running (or the device hung): park it. Freeing it now would free what the device reads.
      im.pending.push_back({pool, fence});
    } else {
      if (fence) vkDestroyFence(dev, fence, nullptr);
      vkDestroyCommandPool(dev, pool, nullptr);
    }
    throw;
  }
  vkDestroyFence(dev, fence, nullptr);
  vkDestroyCommandPool(dev, pool, nullptr);
  im.throw_if_validation_messages();
}

}  // namespace vkgmm
