// The Submitter (submitter.hpp) and Context::submit_and_wait on it.
#include "submitter.hpp"

#include <string>

#include "context_impl.hpp"

namespace vkgmm {

namespace {

uint64_t to_ns(double seconds) { return static_cast<uint64_t>(seconds * 1e9); }

}  // namespace

void Submitter::throw_lost(const char* what) {
  lost_ = true;
  throw Error(Status::device_lost, std::string("submit_and_wait: ") + what +
                                       " (VK_ERROR_DEVICE_LOST): the device is lost; create a new Context");
}

void Submitter::destroy_now(const DeadBuffer& b) const {
  for (VkBufferView v : b.texel_views)
    if (v) vkDestroyBufferView(dev_.device, v, nullptr);
  if (b.buffer) vkDestroyBuffer(dev_.device, b.buffer, nullptr);
  if (b.memory) vkFreeMemory(dev_.device, b.memory, nullptr);  // also unmaps it
}

void Submitter::retire(const DeadBuffer& b) {
  std::lock_guard lock(mutex_);
  // Parked work that has finished is reaped first: an app that only records into its own command buffers
  // may never call submit_and_wait again, and its buffers would wait for the Context's end.
  reap_locked();
  if (!pending_.empty()) {
    // A submission that outlived its wait may still read this buffer: destroy it once that is over.
    graveyard_.push_back(b);
    return;
  }
  destroy_now(b);
}

void Submitter::reap_locked() {
  for (size_t i = 0; i < pending_.size();) {
    const VkResult r = vkGetFenceStatus(dev_.device, pending_[i].fence);
    // After device loss every command counts as complete for destruction (Vulkan spec, "Lost Device").
    if (r == VK_SUCCESS || r == VK_ERROR_DEVICE_LOST) {
      if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
      vkDestroyFence(dev_.device, pending_[i].fence, nullptr);
      vkDestroyCommandPool(dev_.device, pending_[i].pool, nullptr);  // frees its command buffer
      pending_[i] = pending_.back();
      pending_.pop_back();
    } else {
      ++i;
    }
  }
  if (!pending_.empty()) return;
  for (const DeadBuffer& b : graveyard_) destroy_now(b);
  graveyard_.clear();
}

bool Submitter::settle() {
  std::lock_guard lock(mutex_);
  for (const Pending& p : pending_) {
    const VkResult r = vkWaitForFences(dev_.device, 1, &p.fence, VK_TRUE, to_ns(dev_.options.timeout_s));
    if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
  }
  reap_locked();
  return pending_.empty();
}

bool Submitter::idle() {
  std::lock_guard lock(mutex_);
  return pending_.empty() && graveyard_.empty();
}

void Submitter::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) {
  if (dev_.options.compile_only)
    throw Error(Status::unsupported, "submit_and_wait: the context only compiles pipelines (nothing is submitted)");
  if (!dev_.queue)
    throw Error(Status::invalid_argument, "submit_and_wait: the context wraps a device without a queue "
                                          "(BorrowedDevice.queue is null): record into your own command buffer");
  if (lost_) throw_lost("the device was lost by an earlier submission");
  const VkDevice device = dev_.device;
  {
    std::lock_guard lock(mutex_);
    reap_locked();
  }
  // A transient pool of this call's own: recording needs no lock, so concurrent callers record in
  // parallel and a callback may create or destroy vkgmm objects (which take the queue lock).
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  cp.queueFamilyIndex = dev_.queue_family;
  check_created(vkCreateCommandPool(device, &cp, nullptr, &pool), pool, "submit_and_wait: vkCreateCommandPool");
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool submitted = false;
  try {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check_created(vkAllocateCommandBuffers(device, &ai, &cb), cb, "submit_and_wait: vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check_vk(vkBeginCommandBuffer(cb, &bi), "submit_and_wait: vkBeginCommandBuffer");
    record(cb);
    // The fence's signal makes the device's writes available, not visible to the host: Buffer::download
    // and the callers' mapped reads need this barrier ahead of it (the spec's "compute write, host read").
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
    check_vk(vkEndCommandBuffer(cb), "submit_and_wait: vkEndCommandBuffer");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check_created(vkCreateFence(device, &fi, nullptr, &fence), fence, "submit_and_wait: vkCreateFence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    {
      std::lock_guard lock(mutex_);
      VkResult r = faults.take(FaultPoint::submit);
      if (r == VK_SUCCESS) r = vkQueueSubmit(dev_.queue, 1, &si, fence);
      if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
      check_vk(r, "submit_and_wait: vkQueueSubmit");
      submitted = true;
      submitted_any_ = true;
    }
    const double timeout = dev_.options.timeout_s;
    VkResult r = vkWaitForFences(device, 1, &fence, VK_TRUE, to_ns(timeout));
    if (const VkResult injected = faults.take(FaultPoint::wait); injected != VK_SUCCESS) r = injected;
    if (r == VK_TIMEOUT)
      throw Error(Status::device_lost,
                  "submit_and_wait: vkWaitForFences returned VK_TIMEOUT after " + std::to_string(timeout) +
                      " s (ContextOptions::timeout_s, VKGMM_TIMEOUT_S): the device may be hung; the work stays "
                      "queued and later submissions run after it");
    if (r == VK_ERROR_DEVICE_LOST) throw_lost("vkWaitForFences failed");
    check_vk(r, "submit_and_wait: vkWaitForFences");
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (submitted && vkGetFenceStatus(device, fence) == VK_NOT_READY) {
      // Still running (or the device hung): park it. Freeing it now would free what the device reads.
      pending_.push_back({pool, fence});
    } else {
      if (fence) vkDestroyFence(device, fence, nullptr);
      vkDestroyCommandPool(device, pool, nullptr);
    }
    throw;
  }
  vkDestroyFence(device, fence, nullptr);
  vkDestroyCommandPool(device, pool, nullptr);
}

void Context::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) {
  impl_->submitter.submit_and_wait(record);
  impl_->log.throw_if_any();
}

}  // namespace vkgmm
