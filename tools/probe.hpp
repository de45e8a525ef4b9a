// What the device can do at best, measured: the yardsticks the bench reports its results against.
// Internal (tools/, vkgmm_tool_support; not installed): for `vkgmm info` and the bench.
#pragma once

#include <cstdint>

#include "vkgmm/context.hpp"

namespace vkgmm {

// vkCmdCopyBuffer between two buffers of its own: the copy bandwidth's probe, and the bench's yardstick
// for a workload's bytes (timed alternately with it). Copies larger than the buffers (`capacity` bytes
// each) are recorded in pieces.
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

struct DeviceCeilings {
  double fma_gflops = 0;  // fp32 FMA throughput from registers only (an FMA counts as 2 FLOPs)
  double copy_gbps = 0;   // vkCmdCopyBuffer between two vkgmm buffers, bytes read + bytes written per second
};

// Runs a register-only FMA shader and a buffer copy, a few times each, and keeps the best of each.
// Timed with timestamp queries (host wall clock when the queue has none). Takes about a second on a
// CPU driver such as lavapipe; the work is scaled to the device, so fast GPUs take less.
DeviceCeilings measure_ceilings(Context& ctx);

}  // namespace vkgmm
