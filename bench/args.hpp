// `vkgmm bench` options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models.hpp"
#include "vkgmm/types.hpp"
#include "workloads.hpp"

namespace bench {

enum class TilingMode {
  library,  // no --tiling: the library's automatic choice
  fixed,    // --tiling TM,TK,TN
  cached,   // --tiling auto: the sweep's cached choice for the workload, else the library's
};

// Where the timed calls' group sizes live: on the host (the plan builds the metadata), in a device
// buffer (record() builds it on the device), or both, timed alternately.
enum class Metadata { host, device, both };
const char* metadata_name(Metadata m);

// The device path's gmm grid (vkgmm::DeviceGrid): the library's choice, one forced, or both timed
// alternately (indirect, and bound through a workspace that is no indirect buffer: the library's fallback).
enum class GridRun { automatic, indirect, bound, both };
const char* grid_run_name(GridRun g);

// --scale's default: every model's four layers (T = 1, 8, 512, 4096) checked and timed in 2.5-4.3 min on
// lavapipe with 2 cores shared with other work (FMA ceiling at a third of a quiet machine's); the 4096-token
// layers and their CPU references are most of it.
constexpr int64_t kDefaultModelScale = 8;

// How the ops' workgroups take their work items (vkgmm::Grid, set on each problem): the library's choice,
// one forced, or both timed alternately (every timed path per visit, then persistent).
enum class WorkgroupGrid { automatic, per_visit, persistent, both };
const char* workgroup_grid_name(WorkgroupGrid g);

struct Options {
  std::vector<Workload> workloads;  // presets in the order given, then the custom one
  // --model: each model's layer at every --tokens count, after the workloads; --scale divides its sizes.
  std::vector<ModelLayer> layers;
  int64_t scale = kDefaultModelScale;
  TilingMode tiling_mode = TilingMode::library;
  Metadata metadata = Metadata::both;
  GridRun grid = GridRun::automatic;
  WorkgroupGrid workgroups = WorkgroupGrid::automatic;  // --grid
  vkgmm::Tiling tiling;
  int reps = 5, warmup = 1;
  int64_t expert_shards = 0;  // --expert-shards: routed workloads' expert windows (0: as few as fit)
  bool reps_given = false;
  bool json = false, sweep = false;
  // --train: each model layer's forward and backward through vkgmm::MoeLayerPlan, timed after its layer.
  bool train = false;
};

extern const char kBenchUsage[];

// Returns 0 with `opts` filled; 1 when --help was printed; 2 with `error` set for a bad command line.
int parse_args(int argc, char** argv, Options& opts, std::string& error);

}  // namespace bench
