// The bench's output: a table for people, or one JSON object for tools (--json). Both on stdout.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "models.hpp"
#include "probe.hpp"
#include "timing.hpp"
#include "train.hpp"
#include "workloads.hpp"

namespace bench {

struct RunInfo {
  std::string device, driver;
  bool cpu_device = false;  // a CPU driver (lavapipe): its caches are the host's
  vkgmm::DeviceCeilings ceilings;
  std::string openblas;  // description, or empty when the build has no OpenBLAS
  // What runs before every timed call (bench/eviction.hpp): its kind and the bytes it reads.
  std::string eviction_kind;
  uint64_t eviction_bytes = 0;
};

struct Result {
  Workload work;
  std::string metadata = "host";  // --metadata: host, device or both
  std::string tiling;
  std::string plan;  // Instance::describe() of the timed call's plans
  int reps = 0;
  // Device calls timed for this workload (warmup ones included) and the cache evictions run before them.
  uint64_t timed_calls = 0, evictions = 0;
  // The calls timed: the host path's (the device path's with --metadata device). Everything below that
  // is not device_* is of these calls.
  Times time;
  // GFLOP/s over the FMA ceiling, GB/s over the streaming read's bandwidth (DeviceCeilings): the roofs'
  // fractions; NaN where the call beat the roof, which means the probe did not measure the device's best
  // (printed as a probe failure, `probe_failures` says which, JSON null), never a figure above 100 %.
  double gflops = 0, gbps = 0, ceiling_fraction = 0;
  double read_fraction = 0;
  std::vector<std::string> probe_failures;
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
  // The same shape as a single group (G = 1), timed alternately with `time`'s calls, in ms, its FLOPs and
  // its own tiling: what grouping costs per FLOP.
  std::optional<double> one_group_ms;
  double one_group_flops = 0;
  std::string one_group_tiling;
  // Timed alternately with `time`'s calls: vkCmdCopyBuffer moving the call's bytes (copy_fraction is its
  // median over gpu_ms_median: 1, as fast as a copy of the same bytes), and for block-format weights the
  // same call with unquantized weights (the quantized call's peer). Absent for model layers, whose copy_fraction is
  // GB/s over the probe's best-case copy bandwidth.
  std::optional<double> copy_ms, peer_ms;
  double copy_fraction = 0;
  // The host path's call with the operands in app-owned VkBuffers, borrowed (Context::borrow_buffer),
  // and that over the same call on vkgmm's own buffers, the two timed alternately.
  std::optional<double> app_ms, app_ratio;
  // The property flags of the memory the app's buffers were allocated in, and of vkgmm's own buffers'.
  uint32_t app_memory_flags = 0, own_memory_flags = 0;
  std::vector<std::string> notes;  // why a baseline is absent, which tiling source was used, ...
  // Routed by ids (work.routed()): `time` is the combined call's. Timed alternately with it: the same
  // call per slot (no combine), the unfused chain, and the grouped gemm alone on rows sorted on the host
  // (gpu ms medians; absent when not run). chain_tiling / sorted_tiling: what their gmm plans ran.
  std::optional<double> per_slot_ms, chain_ms, sorted_ms;
  std::string chain_tiling, sorted_tiling;
  int64_t expert_shards = 0;  // the calls the experts were split into (1: one window of all E)
  // A routed backward (work.op backward, moe-grad-ids): `time` is GmmBackwardPlan's; timed alternately
  // with it, forward_ms the routed forward (GmmPlan, combined) and sorted_ms the sorted path's backward
  // (sorted_tiling its tiling); the tokens and experts the check compared with the reference.
  std::optional<double> forward_ms;
  int64_t checked_tokens = 0, checked_experts = 0;
  // A model's layer (--model): `work` is its gate/up projection; the times, GFLOP/s and ratios are the
  // whole layer's (gate/up and down in one command buffer).
  std::optional<ModelLayer> layer;
  // --train: the layer's training step through vkgmm::MoeLayerPlan (its own router and top-k).
  std::optional<TrainResult> train;
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
  std::string default_plan;    // Instance::describe() of its plans: the table's call's
  std::string cache_file;
  std::string not_cached;      // why the best was not stored, or empty
  int reps = 0;
  uint64_t timed_calls = 0, evictions = 0;
};

void print_sweep_table(std::FILE* f, const RunInfo& run, const std::vector<SweepResult>& results);
void print_sweep_json(std::FILE* f, const RunInfo& run, const std::vector<SweepResult>& results);

}  // namespace bench
