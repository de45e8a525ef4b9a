// `vkgmm bench` options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vkgmm/types.hpp"
#include "workloads.hpp"

namespace bench {

enum class TilingMode {
  library,  // no --tiling: the library's automatic choice
  fixed,    // --tiling TM,TK,TN
  cached,   // --tiling auto: the sweep's cached choice for the workload, else the library's
};

struct Options {
  std::vector<Workload> workloads;  // presets in the order given, then the custom one
  TilingMode tiling_mode = TilingMode::library;
  vkgmm::Tiling tiling;
  int reps = 5, warmup = 1;
  bool reps_given = false;
  bool json = false, sweep = false;
};

extern const char kBenchUsage[];

// Returns 0 with `opts` filled; 1 when --help was printed; 2 with `error` set for a bad command line.
int parse_args(int argc, char** argv, Options& opts, std::string& error);

}  // namespace bench
