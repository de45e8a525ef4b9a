// The bench's output: a table for people, or one JSON object for tools (--json). Both on stdout.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "models.hpp"
#include "probe.hpp"
#include "timing.hpp"
#include "workloads.hpp"

namespace bench {

struct RunInfo {
  std::string device, driver;
  vkgmm::DeviceCeilings ceilings;
  std::string openblas;  // description, or empty when the build has no OpenBLAS
};

struct Result {
  Workload work;
  std::string metadata = "host";  // --metadata: host, device or both
  std::string tiling;
  int reps = 0;
  // The calls timed: the host path's (the device path's with --metadata device). Everything below that
  // is not device_* is of these calls.
  Times time;
  double gflops = 0, gbps = 0, ceiling_fraction = 0;
  // --metadata both: the device path's calls (the same inputs and tiling, the sizes in a device buffer),
  // timed alternately with the host path's, and the tiling they ran.
  std::optional<Times> device;
  std::string device_tiling;
  // --device-grid: auto, indirect, bound or both; with both, `device` (or `time` with --metadata device)
  // is the indirect grid's and bound_ms the upper-bound grid's gpu ms median, timed alternately.
  std::string grid = "auto";
  std::optional<double> bound_ms;
  // --grid: auto, per_visit, persistent or both; with both, `time` and `device` are the per-visit grid's
  // and these the persistent grid's gpu ms medians (host path, device path), timed alternately with them.
  std::string workgroups = "auto";
  std::optional<double> persistent_ms, device_persistent_ms;
  // Baseline times per call (ms); absent when the baseline did not run. Ratios are these over
  // gpu_ms_median: above 1, vkgmm is faster.
  std::optional<double> naive_ms, openblas_ms;
  // The same shape as a single group (G = 1), in ms, and its FLOPs: what grouping costs per FLOP.
  std::optional<double> one_group_ms;
  double one_group_flops = 0;
  // Timed alternately with `time`'s calls: vkCmdCopyBuffer moving the call's bytes (copy_fraction is its
  // median over gpu_ms_median: 1, as fast as a copy of the same bytes), and for block-format weights the
  // same call with unquantized weights (issue 15's peer). Absent for model layers, whose copy_fraction is
  // GB/s over the probe's best-case copy bandwidth.
  std::optional<double> copy_ms, peer_ms;
  double copy_fraction = 0;
  // The host path's call with the operands in app-owned VkBuffers, borrowed (Context::borrow_buffer),
  // and that over the same call on vkgmm's own buffers, the two timed alternately.
  std::optional<double> app_ms, app_ratio;
  std::vector<std::string> notes;  // why a baseline is absent, which tiling source was used, ...
  // Routed by ids (work.routed()): `time` is the combined call's. Timed alternately with it: the same
  // call per slot (no combine), the unfused chain, and the grouped gemm alone on rows sorted on the host
  // (gpu ms medians; absent when not run). chain_tiling / sorted_tiling: what their gmm plans ran.
  std::optional<double> per_slot_ms, chain_ms, sorted_ms;
  std::string chain_tiling, sorted_tiling;
  int64_t expert_shards = 0;  // the calls the experts were split into (1: one window of all E)
  // A model's layer (--model): `work` is its gate/up projection; the times, GFLOP/s and ratios are the
  // whole layer's (gate/up and down in one command buffer).
  std::optional<ModelLayer> layer;
};

// FLOPs and bytes of one timed call: the workload's, or the sum of a layer's two projections.
double result_flops(const Result& r);
double result_bytes(const Result& r);

void print_table(std::FILE* f, const RunInfo& run, const std::vector<Result>& results);
void print_json(std::FILE* f, const RunInfo& run, const std::vector<Result>& results);

// --sweep-tiling: every tiling tried for a workload, and the best.
struct SweepResult {
  Workload work;
  struct Tried {
    std::string tiling;
    double gpu_ms_median;
  };
  std::vector<Tried> tried;  // in the order tried
  size_t best = 0;           // index into tried
  std::string default_tiling;  // what the library picks on its own (tried first)
  std::string cache_file;
};

void print_sweep_table(std::FILE* f, const RunInfo& run, const std::vector<SweepResult>& results);
void print_sweep_json(std::FILE* f, const RunInfo& run, const std::vector<SweepResult>& results);

}  // namespace bench
