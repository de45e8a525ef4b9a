// The report as one JSON object: the device, each distinct pipeline (module, constants, the driver's
// statistics, the main loop's mix), the cases naming their pipelines, and the failures.
#include <cstdio>

#include "json.hpp"
#include "report.hpp"

namespace gpu_report {

namespace {

using tool::json_string;

std::string number(double v, int decimals = 0) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string flag(bool b) { return b ? "true" : "false"; }

// {"64": 32.000, ...}: loads per iteration by width in bits.
std::string by_width(const std::map<int, double>& bits) {
  std::string s;
  for (const auto& [b, n] : bits) s += std::string(s.empty() ? "" : ", ") + json_string(std::to_string(b)) + ": " + number(n, 3);
  return "{" + s + "}";
}

std::string mix_json(const Mix& m) {
  if (!m.found) return "null";
  const std::pair<const char*, double> counts[] = {
      {"instructions", m.instructions}, {"fma", m.fma},       {"fma_work", m.fma_work},
      {"matrix", m.matrix},             {"matrix_work", m.matrix_work},
      {"valu", m.valu},                 {"salu", m.salu},     {"branches", m.branches},
      {"waits", m.waits},               {"barriers", m.barriers}, {"scalar_loads", m.scalar_loads},
      {"shared_loads", m.shared_loads}, {"shared_stores", m.shared_stores}, {"shared_bytes", m.shared_bytes()},
      {"global_loads", m.global_loads}, {"global_bytes", m.global_bytes()},
      {"local_loads", m.local_loads},   {"local_stores", m.local_stores}};
  std::string s = "{\"k_per_iteration\": " + std::to_string(m.k_per_iteration);
  for (const auto& [name, v] : counts) s += ", " + json_string(name) + ": " + number(v, 3);
  return s + ", \"fma_share\": " + number(m.fma_share(), 4) + ", \"fma_valu_share\": " + number(m.fma_valu_share(), 4) +
         ", \"shared_load_bits\": " + by_width(m.shared_load_bits) + ", \"global_load_bits\": " +
         by_width(m.global_load_bits) + ", \"nested_loops\": " + std::to_string(m.nested_loops) +
         ", \"unknown_trip_counts\": " + std::to_string(m.unknown_trips) + "}";
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::aco: return "aco";
    case Isa::nak: return "nak";
    case Isa::intel: return "intel";
  }
  return "?";
}

// The statistics under the report's own names (analysis.hpp), null where the driver gives none.
std::string compiled_json(const Analysis& a) {
  auto value = [](double v) { return v < 0 ? std::string("null") : number(v); };
  return std::string("{\"isa\": ") + json_string(isa_name(a.isa)) + ", \"registers\": " + value(a.registers) +
         ", \"scalar_registers\": " + value(a.scalar_registers) + ", \"spills\": " + value(a.spills) +
         ", \"fills\": " + value(a.fills) + ", \"local_bytes\": " + value(a.local_bytes) +
         ", \"shared_bytes\": " + value(a.shared_bytes) + ", \"occupancy\": " + value(a.occupancy) +
         ", \"code_bytes\": " + value(a.code_bytes) + "}";
}

std::string pipeline_json(const Analysis& a) {
  std::string s = "{\"id\": " + json_string(a.id) + ", \"role\": " + json_string(a.role) +
                  ", \"module\": " + json_string(a.module) +
                  ", \"layout\": " + json_string(a.split ? "split" : "plain") + ", \"constants\": [";
  for (size_t i = 0; i < a.constants.size(); ++i)
    s += std::string(i ? ", " : "") + "{\"id\": " + std::to_string(a.constants[i].id) + ", \"name\": " +
         json_string(a.constants[i].name) + ", \"value\": " + std::to_string(a.constants[i].value) + "}";
  s += "], \"wave_size\": " + std::to_string(a.wave_size) + ", \"statistics\": ";
  if (!a.statistics) return s + "null, \"main_loop\": null}";
  std::string stats;
  for (const auto& [name, v] : a.all_statistics) stats += std::string(stats.empty() ? "" : ", ") + json_string(name) + ": " + number(v);
  return s + "{" + stats + "}, \"compiled\": " + compiled_json(a) + ", \"main_loop\": " + mix_json(a.mix) + "}";
}

std::string case_json(const Report& r, const Case& c) {
  std::string s = "{\"name\": " + json_string(c.name) + ", \"shape\": " + json_string(c.shape) +
                  ", \"decode\": " + flag(c.decode) + ", \"quantized\": " + flag(c.quantized) +
                  ", \"error\": " + (c.error.empty() ? "null" : json_string(c.error)) + ", \"pipelines\": [";
  for (size_t j = 0; j < c.pipelines.size(); ++j) {
    const CasePipeline& p = c.pipelines[j];
    s += std::string(j ? ", " : "") + "{\"plan\": " + json_string(p.plan) + ", \"role\": " + json_string(p.pipeline.role) +
         ", \"tiling\": " + json_string(p.tiling) + ", \"pipeline\": " + json_string(r.of(p).id) +
         ", \"pass\": " + std::to_string(p.pipeline.pass) + ", \"gated\": " + flag(gated(c, p)) + "}";
  }
  return s + "]}";
}

}  // namespace

std::string to_json(const Report& r) {
  std::string s = "{\"device\": " + json_string(r.device) + ", \"driver\": " + json_string(r.driver) +
                  ", \"executable_properties\": " + flag(r.executables) +
                  ", \"min_fma_share\": " + number(r.min_fma_share, 3) + ", \"pipelines\": [";
  for (size_t i = 0; i < r.pipelines.size(); ++i) s += std::string(i ? ", " : "") + pipeline_json(r.pipelines[i]);
  s += "], \"cases\": [";
  for (size_t i = 0; i < r.cases.size(); ++i) s += std::string(i ? ", " : "") + case_json(r, r.cases[i]);
  s += "], \"failures\": [";
  for (size_t i = 0; i < r.failures.size(); ++i) s += std::string(i ? ", " : "") + json_string(r.failures[i]);
  return s + "]}";
}

}  // namespace gpu_report
