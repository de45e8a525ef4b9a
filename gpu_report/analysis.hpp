// One compiled pipeline as the report shows it: its module and constants, what the driver said of it,
// and its main loop's instruction mix.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "planned_pipeline.hpp"
#include "executables.hpp"
#include "isa_mix.hpp"

namespace gpu_report {

struct Analysis {
  std::string id;      // "P1", "P2", ... in order of first use
  std::string module;  // the embedded module's name (cmake/shaders.cmake): gmm, gmm_s16, tgmm_split, ...
  const char* role = "op";
  bool split = false;  // the split layout (operands bound in parts: VKGMM_SPLIT modules), else the plain one
  struct Constant {
    uint32_t id;
    std::string name;  // the shader's (shaders/interface.h); "local_size_x" for the workgroup size
    uint32_t value;
  };
  std::vector<Constant> constants;  // every constant the module declares, as the pipeline sets it
  bool statistics = false;  // the driver gave its executables' statistics
  uint32_t wave_size = 0;   // the executable's subgroup size (RADV: 64 for compute unless wave32 is forced)
  double vgprs = -1, sgprs = -1, spilled_vgprs = -1, spilled_sgprs = -1, lds = -1, waves = -1, code_size = -1,
         scratch = -1;
  std::vector<std::pair<std::string, double>> all_statistics;
  std::string disassembly;  // empty: none given
  Mix mix;
  bool spills() const { return spilled_vgprs > 0 || spilled_sgprs > 0 || scratch > 0; }
};

// The module's name, its constants by name, and (when `executables`) the driver's statistics and the
// disassembly's main-loop mix.
Analysis analyse(VkDevice device, const vkgmm::PlannedPipeline& p, bool executables);

}  // namespace gpu_report
