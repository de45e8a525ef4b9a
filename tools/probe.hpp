// What the device can do at best, measured: the yardsticks the bench reports its results against.
// Internal (tools/, vkgmm_tool_support; not installed): for `vkgmm info` and the bench.
#pragma once

#include <cstdint>
#include <string>

#include "cache_size.hpp"
#include "vkgmm/context.hpp"

namespace vkgmm {

// vkCmdCopyBuffer between two buffers of its own: the copy bandwidth's probe, and the bench's yardstick
// for a workload's bytes (timed alternately with it). Copies larger than the buffers (`capacity` bytes
// each) are recorded in pieces, each a pass over the buffers.
class BufferCopy {
 public:
  BufferCopy(Context& ctx, uint64_t capacity);
  // Records a copy of `bytes` bytes (read once, written once).
  void record(VkCommandBuffer cb, uint64_t bytes) const;
  uint64_t capacity() const { return capacity_; }

 private:
  uint64_t capacity_;
  Buffer src_, dst_;
};

// A streaming read of a buffer of its own (shaders/read_ceiling.comp): workgroups, a multiple of
// DeviceInfo::compute_units, each read a contiguous part of the buffer in 16-byte loads and write one
// word of what they read. Through the buffer's texel view (`texel`; CPU devices, where vkgmm reads its
// inputs so) or its storage binding, in windows of what one binding reaches.
class StreamingRead {
 public:
  StreamingRead(Context& ctx, uint64_t bytes, bool texel);
  // Whether the texel build can read a buffer of `bytes` on this context's device.
  static bool texel_usable(const Context& ctx, uint64_t bytes);
  // Records `passes` reads of the whole buffer (bytes() each).
  void record(VkCommandBuffer cb, uint32_t passes) const;
  // After a record()'s work has finished: throws std::runtime_error unless each window's workgroups read
  // every vector of it once (their words add up to the window's, mod 2^32), so that no rate is reported
  // for bytes a driver's subgroups skipped.
  void check() const;
  uint64_t bytes() const { return bytes_; }
  bool texel() const { return texel_; }

 private:
  Context& ctx_;
  uint64_t bytes_;
  bool texel_;
  uint32_t workgroups_ = 0, windows_ = 0;
  uint64_t window_vectors_ = 0;  // 16-byte vectors per window (the last one shorter)
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  Buffer data_, out_;
  VkBufferView view_ = VK_NULL_HANDLE;  // the data's texel view (vkgmm's, texel build only)
};

// How much a memory probe moves: at least `want` bytes read per timed run, in passes over buffers of at
// most `max_buffer` bytes each (one huge allocation where the device allows it, repeated passes over a
// smaller one where memory is short).
struct StreamSize {
  uint64_t buffer_bytes = 0;  // each buffer's size, a multiple of 256
  uint32_t passes = 0;
  uint64_t run_bytes() const { return buffer_bytes * passes; }
};
StreamSize stream_size(uint64_t want, uint64_t max_buffer);

// What the memory probes read per timed run: 8x the last-level cache, and on GPUs at least 1 GiB.
uint64_t memory_probe_bytes(const DeviceInfo& info, uint64_t cache_bytes);

// The largest buffer of `count` alive at once that a probe allocates: within maxMemoryAllocationSize,
// and the buffers together within half the heap vkgmm's buffers live in.
uint64_t max_probe_buffer(const Context& ctx, uint32_t count);

struct DeviceCeilings {
  double fma_gflops = 0;  // fp32 FMA throughput from registers only (an FMA counts as 2 FLOPs)
  double read_gbps = 0;   // the streaming read of StreamingRead, bytes read per second (the memory roof)
  double copy_gbps = 0;   // vkCmdCopyBuffer between two vkgmm buffers, bytes read + bytes written per second
  // What the memory probes were sized by, and moved per timed run.
  tool::CacheSize cache;
  StreamSize read_size, copy_size;  // copy_size: bytes read (as many written)
  std::string read_path;            // "texel view" or "storage buffer": the faster, which read_gbps is
};

// Runs a register-only FMA shader, the streaming read and a buffer copy, a few times each, and keeps the
// best of each. Timed with timestamp queries (host wall clock when the queue has none). Takes a few
// seconds on a CPU driver such as lavapipe (mostly the memory probes' 8x the host's L3 per run).
DeviceCeilings measure_ceilings(Context& ctx);

}  // namespace vkgmm
