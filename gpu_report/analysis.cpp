#include "analysis.hpp"

#include <algorithm>
#include <initializer_list>
#include <optional>


namespace gpu_report {

namespace {

// The sum of the named statistics the driver gives (-1 where it gives none of them).
double sum_of(const Executable& e, std::initializer_list<const char*> names) {
  double sum = -1;
  for (const char* n : names)
    if (const double v = e.statistic(n); v >= 0) sum = std::max(sum, 0.0) + v;
  return sum;
}

// Each vendor's statistics under the report's names (analysis.hpp). The names are the drivers' own:
// RADV's ACO, NVK's NAK (Mesa 25 gives only GPRs, code size and SLM size; Mesa 26 adds spills, fills and
// warps per SM) and ANV's.
void read_statistics(const Executable& e, Analysis& a) {
  switch (a.isa) {
    case Isa::aco:
      a.registers = e.statistic("VGPRs");
      a.scalar_registers = e.statistic("SGPRs");
      a.spills = sum_of(e, {"Spilled VGPRs", "Spilled SGPRs"});
      a.local_bytes = e.statistic("Scratch size");
      a.shared_bytes = e.statistic("LDS size");
      a.occupancy = e.statistic("Subgroups per SIMD");
      a.code_bytes = e.statistic("Code size");
      break;
    case Isa::nak:
      a.registers = e.statistic("Number of GPRs");
      a.spills = e.statistic("Spills to memory");
      a.fills = e.statistic("Fills from memory");
      a.local_bytes = e.statistic("SLM Size");
      if (a.local_bytes < 0) a.local_bytes = e.statistic("SLM size");
      a.occupancy = e.statistic("Max warps/SM");
      a.code_bytes = sum_of(e, {"Code Size", "Code size"});
      break;
    case Isa::intel:
      a.registers = e.statistic("Max live registers");
      a.spills = e.statistic("Spill Count");
      a.fills = e.statistic("Fill Count");
      a.local_bytes = e.statistic("Scratch Memory Size");
      a.shared_bytes = e.statistic("Workgroup Memory Size");
      break;
  }
}

}  // namespace

Analysis analyse(VkDevice device, const vkgmm::internals::PlanPipeline& p, bool executables) {
  Analysis a;
  a.module = p.module;
  a.role = p.role;
  a.split = p.split;
  a.constants = p.constants;
  if (!executables) return a;
  const std::vector<Executable> ex = read_executables(device, p.pipeline);
  if (ex.empty()) return a;
  const Executable& e = ex.front();  // a compute pipeline has one
  a.statistics = !e.statistics.empty();
  a.wave_size = e.subgroup_size;
  a.all_statistics = e.statistics;
  for (const auto& [name, text] : e.representations)
    if (const std::optional<Isa> isa = isa_of_representation(name)) {
      a.isa = *isa;
      a.disassembly = text;
      break;
    }
  read_statistics(e, a);
  if (!a.disassembly.empty()) a.mix = main_loop_mix(parse_disassembly(a.disassembly, a.isa));
  return a;
}

}  // namespace gpu_report
