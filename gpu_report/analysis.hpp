// One compiled pipeline as the report shows it: its module and constants, what the driver said of it,
// and its main loop's instruction mix, read from any of the three compilers vkgmm is checked with:
// AMD's ACO (RADV), NVIDIA's NAK (NVK) and Intel's (ANV).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "executables.hpp"
#include "isa_mix.hpp"
#include "vkgmm/plan_pipelines.hpp"

namespace gpu_report {

struct Analysis {
  std::string id;      // "P1", "P2", ... in order of first use
  std::string module;  // the embedded module's name (cmake/shaders.cmake): gmm, gmm_s16, tgmm_split, ...
  std::string role = "op";
  bool split = false;  // the split layout (operands bound in parts: VKGMM_SPLIT modules), else the plain one
  using Constant = vkgmm::internals::PipelineConstant;
  std::vector<Constant> constants;  // every constant the module declares, as the pipeline sets it
  bool statistics = false;  // the driver gave its executables' statistics
  uint32_t wave_size = 0;   // the executable's subgroup size (RADV: 64 for compute unless wave32 is forced)
  // The driver's statistics under one name each, whatever the vendor calls them (-1: not given):
  //   registers         ACO: VGPRs; NAK: GPRs; ANV: the most registers live at once
  //   scalar_registers  ACO: SGPRs
  //   spills, fills     ACO: spilled VGPRs + SGPRs (fills not given); NAK (Mesa 26): spills to and fills
  //                     from memory; ANV: spill and fill counts
  //   local_bytes       per-invocation memory the compiler added: ACO's scratch, NAK's local memory (SLM),
  //                     ANV's scratch
  //   shared_bytes      ACO: LDS; ANV: workgroup memory
  //   occupancy         ACO: waves per SIMD; NAK (Mesa 26): warps per SM
  //   code_bytes        ACO, NAK
  Isa isa = Isa::aco;
  double registers = -1, scalar_registers = -1, spills = -1, fills = -1, local_bytes = -1, shared_bytes = -1,
         occupancy = -1, code_bytes = -1;
  std::vector<std::pair<std::string, double>> all_statistics;
  std::string disassembly;  // empty: none given
  Mix mix;
  bool spilled() const { return spills > 0 || fills > 0 || local_bytes > 0; }
};

// The pipeline's module and constants, and (when `executables`) the driver's statistics and the
// disassembly's main-loop mix.
Analysis analyse(VkDevice device, const vkgmm::internals::PlanPipeline& p, bool executables);

}  // namespace gpu_report
