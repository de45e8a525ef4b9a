// vkgmm's own buffers: mapped memory, or device-local memory reached through staging copies where the
// host's window on device memory is small (buffer_memory.hpp); refused up front (out_of_memory, naming the
// size and the heap) when a request cannot fit, registered so that views of them are checked against their
// real size, and destroyed only once no pending submission can still read them.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <utility>

#include "buffer_memory.hpp"
#include "context_impl.hpp"
#include "texel_views.hpp"
#include "operands.hpp"

namespace vkgmm {

struct Buffer::State {
  std::shared_ptr<Context::Impl> ctx;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize allocated = 0;  // bytes counted against `heap` (0 until the allocation succeeded)
  uint32_t heap = 0;
  uint8_t* mapped = nullptr;  // null for a borrowed or staged buffer
  bool borrowed = false;      // the VkBuffer is the app's: only the views are vkgmm's to destroy
  bool staged = false;        // device-local, not mapped: upload and download copy through staging
  bool registered = false;    // in the registry under `buffer` (an entry of another Buffer is not this one's)
  ~State() {
    if (!ctx) return;
    // Forget the buffer first (its texel views go with it), then free it now or once parked work is done.
    DeadBuffer dead{borrowed ? VK_NULL_HANDLE : buffer, memory, {VK_NULL_HANDLE, VK_NULL_HANDLE}};
    if (registered) {
      const OwnBuffer own = ctx->buffers.remove(buffer);
      dead.texel_views[0] = own.texel_views[0];
      dead.texel_views[1] = own.texel_views[1];
    }
    if (memory) {
      ctx->buffers.refund(heap, allocated);
      ctx->buffers.count_allocation(-1);
    }
    ctx->submitter.retire(dead);
  }
};

Buffer::Buffer() = default;
// A moved-from Buffer is empty: no handle, size 0.
Buffer::Buffer(Buffer&& o) noexcept : state_(std::move(o.state_)), size_(std::exchange(o.size_, 0)) {}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  state_ = std::move(o.state_);
  size_ = std::exchange(o.size_, 0);
  return *this;
}
Buffer::~Buffer() = default;
VkBuffer Buffer::handle() const { return state_ ? state_->buffer : VK_NULL_HANDLE; }

namespace {

// Staging copies move at most this much at a time (a staging buffer of this size at most).
constexpr VkDeviceSize kStagingPiece = VkDeviceSize(64) << 20;
// The smallest staging buffer made: copies of a few MiB at a time reuse one.
constexpr VkDeviceSize kStagingMinimum = VkDeviceSize(4) << 20;

// A host-visible buffer of at least `bytes` (up to kStagingPiece), mapped. A failed step retires what
// was made before it.
StagingBuffer make_staging(Context::Impl& im, VkDeviceSize bytes, const char* what) {
  const Device& dev = im.dev;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = std::min(std::bit_ceil(std::max(bytes, kStagingMinimum)), kStagingPiece);
  bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  DeadBuffer made{VK_NULL_HANDLE, VK_NULL_HANDLE, {VK_NULL_HANDLE, VK_NULL_HANDLE}};
  struct RetireOnThrow {
    Context::Impl& im;
    DeadBuffer& b;
    bool kept = false;
    ~RetireOnThrow() {
      if (!kept) im.submitter.retire(b);
    }
  } guard{im, made};
  // Each failure names the staging buffer and its size (the caller's copy may be far smaller).
  const std::string staging = std::string(what) + ": the staging buffer of " + std::to_string(bci.size) + " bytes: ";
  // Handles are created into locals and kept only on success: a failed call leaves its output undefined.
  VkBuffer buffer = VK_NULL_HANDLE;
  check_vk(vkCreateBuffer(dev.device, &bci, nullptr, &buffer), (staging + "vkCreateBuffer").c_str());
  made.buffer = buffer;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev.device, made.buffer, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = staging_memory_type(dev.memory, req.memoryTypeBits);
  if (mai.memoryTypeIndex == UINT32_MAX) throw Error(Status::unsupported, std::string(what) + ": no host-visible coherent memory type");
  VkDeviceMemory memory = VK_NULL_HANDLE;
  check_vk(vkAllocateMemory(dev.device, &mai, nullptr, &memory), (staging + "vkAllocateMemory").c_str());
  made.memory = memory;
  check_vk(vkBindBufferMemory(dev.device, made.buffer, made.memory, 0), (staging + "vkBindBufferMemory").c_str());
  void* p = nullptr;
  check_vk(vkMapMemory(dev.device, made.memory, 0, VK_WHOLE_SIZE, 0, &p), (staging + "vkMapMemory").c_str());
  guard.kept = true;
  im.staging.count_made();
  return {made.buffer, made.memory, static_cast<uint8_t*>(p), bci.size};
}

DeadBuffer dead(const StagingBuffer& b) { return {b.buffer, b.memory, {VK_NULL_HANDLE, VK_NULL_HANDLE}}; }

// `bytes` between the host's `host` and a staged buffer's `offset`, through the Context's staging buffer
// (or one made for the call), a piece at a time, each piece one submission that waits. The copy waits for
// every earlier submission's writes and makes its own visible to later work (the barriers around it).
void staged_copy(Context::Impl& im, VkBuffer target, VkDeviceSize offset, const uint8_t* from_host, uint8_t* to_host,
                 VkDeviceSize bytes) {
  const bool to_device = from_host != nullptr;
  const char* what = to_device ? "upload (staged)" : "download (staged)";
  const VkDeviceSize piece_bytes = std::min(bytes, kStagingPiece);
  StagingBuffer staging = im.staging.take(piece_bytes);
  if (!staging.buffer) staging = make_staging(im, piece_bytes, what);
  // Given back once every piece's submission completed; retired, not reused, where one failed or timed
  // out (it may still read the buffer).
  struct Finish {
    Context::Impl& im;
    const StagingBuffer& b;
    bool completed = false;
    ~Finish() {
      const StagingBuffer spare = completed ? im.staging.give_back(b) : b;
      if (spare.buffer) im.submitter.retire(dead(spare));
    }
  } finish{im, staging};
  for (VkDeviceSize done = 0; done < bytes; done += piece_bytes) {
    const VkDeviceSize n = std::min(piece_bytes, bytes - done);
    if (to_device) std::memcpy(staging.mapped, from_host + done, size_t(n));
    im.submitter.submit_and_wait([&](VkCommandBuffer cb) {
      VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      before.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
      before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                           nullptr, 0, nullptr);
      const VkBufferCopy region{to_device ? 0 : offset + done, to_device ? offset + done : 0, n};
      vkCmdCopyBuffer(cb, to_device ? staging.buffer : target, to_device ? target : staging.buffer, 1, &region);
      VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      after.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
      vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &after, 0,
                           nullptr, 0, nullptr);
    });
    if (!to_device) std::memcpy(to_host + done, staging.mapped, size_t(n));
  }
  finish.completed = true;
  im.log.throw_if_any();  // the copies' validation messages, here rather than at a later call
}

}  // namespace

void Buffer::upload(const void* data, size_t bytes, size_t offset) {
  if (!state_) throw Error(Status::invalid_argument, "upload: empty buffer");
  if (offset > size_ || bytes > size_ - offset)
    throw Error(Status::invalid_argument, "upload: " + std::to_string(bytes) + " bytes at offset " +
                                              std::to_string(offset) + " exceed the buffer's " + std::to_string(size_));
  if (state_->staged) {
    if (bytes) staged_copy(*state_->ctx, state_->buffer, offset, static_cast<const uint8_t*>(data), nullptr, bytes);
    return;
  }
  if (!state_->mapped) throw Error(Status::invalid_argument, "upload: a borrowed buffer has no host mapping");
  if (bytes) std::memcpy(state_->mapped + offset, data, bytes);
}

void Buffer::download(void* data, size_t bytes, size_t offset) const {
  if (!state_) throw Error(Status::invalid_argument, "download: empty buffer");
  if (offset > size_ || bytes > size_ - offset)
    throw Error(Status::invalid_argument, "download: " + std::to_string(bytes) + " bytes at offset " +
                                              std::to_string(offset) + " exceed the buffer's " + std::to_string(size_));
  if (state_->staged) {
    if (bytes) staged_copy(*state_->ctx, state_->buffer, offset, nullptr, static_cast<uint8_t*>(data), bytes);
    return;
  }
  if (!state_->mapped) throw Error(Status::invalid_argument, "download: a borrowed buffer has no host mapping");
  if (bytes) std::memcpy(data, state_->mapped + offset, bytes);
}

namespace {

[[noreturn]] void out_of_memory(VkDeviceSize bytes, const std::string& why) {
  throw Error(Status::out_of_memory, "create_buffer: " + std::to_string(bytes) + " bytes: " + why);
}

}  // namespace

Buffer Context::create_buffer(VkDeviceSize bytes) {
  if (bytes == 0) throw Error(Status::invalid_argument, "create_buffer: size must be positive");
  Impl& im = *impl_;
  const Device& dev = im.dev;
  if (dev.options.compile_only)
    throw Error(Status::unsupported, "create_buffer: the context only compiles pipelines (no device memory)");
  if (im.submitter.lost()) throw Error(Status::device_lost,
                                "create_buffer: the device was lost earlier (VK_ERROR_DEVICE_LOST); create a new Context");
  // Drivers may accept a huge allocation lazily (lavapipe does) and fail later, or the OS may; a request
  // no heap could hold is refused here, before any Vulkan call: a heap of a mapped type, or where buffers
  // can be staged, of a device-local one. Staging copies go to vkgmm's own device's queue only: a wrapped
  // device's queue is the app's, which vkgmm uses for submit_and_wait alone.
  const bool can_stage = dev.owns && dev.queue != VK_NULL_HANDLE;
  const VkDeviceSize largest_heap = largest_buffer_heap(dev.memory, can_stage);
  if (bytes > largest_heap)
    out_of_memory(bytes, "larger than the largest memory heap vkgmm's buffers can use (" + std::to_string(largest_heap) +
                             " bytes)");
  const VkDeviceSize max_alloc = dev.max_allocation;
  if (max_alloc && bytes > max_alloc)
    out_of_memory(bytes, "larger than the device's maxMemoryAllocationSize (" + std::to_string(max_alloc) + ")");

  auto st = std::make_unique<Buffer::State>();
  st->ctx = impl_;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  // Whole 16-byte texels, whatever was asked: a 16-bit operand with an odd element count ends mid-word,
  // and the packed shaders (no 16-bit storage) read and write that last word whole; an input whose
  // element count is not a multiple of 4 ends mid-texel, and its texel view reads that texel whole (else
  // the input would lose the texel path: the storage loads, or past one binding the split build). With
  // the padding, descriptors and views covering them stay inside the VkBuffer (own_buffer_capacity), so
  // callers never round.
  bci.size = whole_texels(bytes);
  // INDIRECT_BUFFER: any of vkgmm's buffers may be a workspace that the indirect grid's command is read from.
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
              VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  // Handles are created into locals: a failed call leaves its output undefined, and ~State destroys
  // whatever st holds.
  VkBuffer buffer = VK_NULL_HANDLE;
  check_vk(vkCreateBuffer(dev.device, &bci, nullptr, &buffer), "create_buffer: vkCreateBuffer");
  st->buffer = buffer;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev.device, st->buffer, &req);
  BufferMemory choice =
      choose_buffer_memory(dev.memory, req.memoryTypeBits, req.size, can_stage, can_stage && dev.options.staged_memory);
  if (choice.type == UINT32_MAX) throw Error(Status::unsupported, "create_buffer: no host-visible coherent memory type");
  // The choice, then where the host's small window on device memory is full (vkgmm's count or the
  // driver's), the window's fallback (device-local and staged, or system memory).
  const BufferMemory fallback = window_fallback(dev.memory, req.memoryTypeBits, can_stage, choice);
  for (bool last = fallback.type == UINT32_MAX;; last = true) {
    const uint32_t heap = dev.memory.memoryTypes[choice.type].heapIndex;
    const VkDeviceSize heap_size = dev.memory.memoryHeaps[heap].size;
    uint64_t held = 0;
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    // Device memory objects are few on some drivers (maxMemoryAllocationCount, 4096 on many): refused
    // here with a reason rather than past the limit, where the driver need not fail cleanly.
    const uint32_t max_count = dev.max_allocation_count;
    if (max_count && im.buffers.live_allocations() >= int64_t(max_count))
      out_of_memory(bytes, "vkgmm already holds " + std::to_string(im.buffers.live_allocations()) +
                               " device memory allocations, the device's maxMemoryAllocationCount (each Buffer "
                               "holds one, each plan one or more); destroy some first");
    if (im.buffers.charge(heap, req.size, heap_size, held)) {
      VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      mai.allocationSize = req.size;
      mai.memoryTypeIndex = choice.type;
      r = vkAllocateMemory(dev.device, &mai, nullptr, &memory);
      if (r == VK_SUCCESS) {
        st->memory = memory;
        st->allocated = req.size;  // released by ~State, whatever happens below
        st->heap = heap;
        break;
      }
      im.buffers.refund(heap, req.size);
      const bool full = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
      if (last || !full)
        check_vk(r, ("create_buffer: vkAllocateMemory of " + std::to_string(req.size) + " bytes in heap " +
                     std::to_string(heap))
                        .c_str());
    } else if (last) {
      out_of_memory(bytes, "memory heap " + std::to_string(heap) + " holds " + std::to_string(heap_size) +
                               " bytes, of which vkgmm's buffers already use " + std::to_string(held));
    }
    choice = fallback;
  }
  im.buffers.count_allocation(+1);
  check_vk(vkBindBufferMemory(dev.device, st->buffer, st->memory, 0), "create_buffer: vkBindBufferMemory");
  if (choice.mapped) {
    void* p = nullptr;
    check_vk(vkMapMemory(dev.device, st->memory, 0, VK_WHOLE_SIZE, 0, &p), "create_buffer: vkMapMemory");
    st->mapped = static_cast<uint8_t*>(p);
  } else {
    st->staged = true;
  }
  OwnBuffer own{bytes, {VK_NULL_HANDLE, VK_NULL_HANDLE}, false, true, st->staged, choice.type};
  create_texel_views(dev, st->buffer, bci.size, own.texel_views);  // destroys its own views if it throws
  // From here on, ~State destroys the views with the buffer. A new VkBuffer cannot be known already
  // unless an app destroyed a VkBuffer it had lent (borrow_buffer) before its vkgmm Buffer and the
  // driver reused the handle: refuse rather than inherit that entry.
  if (!im.buffers.add(st->buffer, own)) {
    for (VkBufferView v : own.texel_views)
      if (v) vkDestroyBufferView(dev.device, v, nullptr);
    throw Error(Status::internal, "create_buffer: the new VkBuffer's handle is still lent to vkgmm (an app "
                                  "destroyed a borrowed VkBuffer before its vkgmm Buffer)");
  }
  st->registered = true;
  Buffer b;
  b.state_ = std::move(st);
  b.size_ = bytes;
  return b;
}

Buffer Context::borrow_buffer(VkBuffer buffer, VkDeviceSize bytes, bool texel_usage, bool indirect_usage) {
  if (buffer == VK_NULL_HANDLE) throw Error(Status::invalid_argument, "borrow_buffer: buffer is VK_NULL_HANDLE");
  if (bytes == 0) throw Error(Status::invalid_argument, "borrow_buffer: size must be positive");
  Impl& im = *impl_;
  // vkgmm cannot read a VkBuffer's size back; its memory requirement bounds it from above.
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(im.dev.device, buffer, &req);
  if (bytes > req.size)
    throw Error(Status::invalid_argument, "borrow_buffer: " + std::to_string(bytes) +
                                              " bytes is more than the buffer holds (its memory requirement is " +
                                              std::to_string(req.size) + " bytes)");
  OwnBuffer own{bytes, {VK_NULL_HANDLE, VK_NULL_HANDLE}, true, indirect_usage};
  if (texel_usage) create_texel_views(im.dev, buffer, bytes, own.texel_views);
  if (!im.buffers.add(buffer, own)) {
    for (VkBufferView v : own.texel_views)
      if (v) vkDestroyBufferView(im.dev.device, v, nullptr);
    throw Error(Status::invalid_argument,
                "borrow_buffer: this VkBuffer is a vkgmm Buffer already (made or borrowed by vkgmm)");
  }
  auto st = std::make_unique<Buffer::State>();
  st->ctx = impl_;
  st->buffer = buffer;
  st->borrowed = true;
  st->registered = true;
  Buffer b;
  b.state_ = std::move(st);
  b.size_ = bytes;
  return b;
}

}  // namespace vkgmm
