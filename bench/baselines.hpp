// What vkgmm is compared with, in the same run on the same inputs:
//   naive:    one dispatch per group (a G = 1 plan on each group's sub-views), all in one command buffer:
//             the same device and kernels, without the grouped metadata that lets one dispatch do it all.
//   openblas: cblas_sgemm per group on the CPU (when the build found OpenBLAS).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runner.hpp"

namespace bench {

class NaiveLoop {
 public:
  // Why the loop cannot run this workload (empty when it can). Per-group views of 16-bit data must
  // start on 4-byte boundaries, which needs even k and n.
  static std::string unsupported_reason(const Workload& w);
  // ... and on this device (block-format weights: per-expert views at binding offsets).
  static std::string unsupported_reason(const Workload& w, const vkgmm::DeviceInfo& info);

  // Builds one plan per non-empty group, with its own zero-filled outputs. For tgmm the loop reads a
  // copy of lhs stored [m, k], because a group's columns of lhs [k, m] are not one contiguous range.
  NaiveLoop(Instance& inst, const vkgmm::TilingChoice& tiling);
  ~NaiveLoop();
  void record(VkCommandBuffer cb) const;
  std::vector<Output> download() const;  // as Instance::download()

 private:
  struct State;
  std::unique_ptr<State> st_;
};

// OpenBLAS's version and thread count ("OpenBLAS 0.3.21 ..., 2 threads"), or empty when the build has
// no OpenBLAS.
std::string openblas_description();

// The per-group sgemm loop, on f32 copies of the inputs (16-bit workloads are compared with an f32
// sgemm: CBLAS has no 16-bit gemm).
class BlasLoop {
 public:
  explicit BlasLoop(const Instance& inst);
  void run();
  const std::vector<Output>& outputs() const { return out_; }

 private:
  const Instance& inst_;
  std::vector<Output> out_;
};

}  // namespace bench
