// The report as Markdown tables: compute-bound cases, decode-sized cases, the auxiliary pipelines, then
// each pipeline's module and constants.
#include <cstdio>

#include "report.hpp"

namespace gpu_report {

namespace {

// A statistic's cell; "-" for one the driver did not give (negative).
std::string cell(double v, int decimals = 0) {
  if (v < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string percent(double share) { return cell(100 * share, 1) + " %"; }

// Loads per op (Mix::ops: an FMA, or a matrix instruction) and their widths: "0.312 (0.25xb64 0.06xb128)".
std::string per_op(double loads, const std::map<int, double>& bits, double ops) {
  std::string widths;
  for (const auto& [b, n] : bits)
    if (n > 0) widths += std::string(widths.empty() ? "" : " ") + cell(n / ops, 2) + "xb" + std::to_string(b);
  return cell(loads / ops, 3) + " (" + (widths.empty() ? "0" : widths) + ")";
}

// "spills/fills", "-" where the driver gives neither.
std::string spill_cell(const Analysis& a) {
  if (a.spills < 0 && a.fills < 0) return "-";
  return cell(a.spills) + "/" + cell(a.fills);
}

// What the occupancy column counts on this compiler.
const char* occupancy_unit(Isa isa) {
  switch (isa) {
    case Isa::aco: return "waves per SIMD";
    case Isa::nak: return "warps per SM";
    case Isa::intel: return "not given";
  }
  return "";
}

struct Row {
  const Case& c;
  const CasePipeline& p;
  const Analysis& a;
};

void print_kernels(const char* title, const std::vector<Row>& rows) {
  std::printf("\n%s\n", title);
  std::printf("| case | m, k, n, G (ids: T, k, n, E, top_k) | plan | pipeline | module | tiling | regs | sregs "
              "| spills/fills | local B | shared B | wave | occupancy | code B | instr/iter | k/iter | FMA/iter | FMA share | FMA/VALU "
              "| matrix/iter (MACs) | shared loads/op (bits) | global loads/op (bits) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const Analysis& a = r.a;
    const Mix& m = a.mix;
    const std::string wave = a.wave_size ? std::to_string(a.wave_size) : "-";
    std::string loop = "| - | - | - | - | - | - | - | - |";
    if (m.found)
      loop = std::string("| ") + cell(m.instructions) + " | " + std::to_string(m.k_per_iteration) + " | " + cell(m.fma) + " | " +
             percent(m.fma_share()) + " | " + percent(m.fma_valu_share()) + " | " + cell(m.matrix) + " (" +
             cell(m.matrix_work) + ") | " + per_op(m.shared_loads, m.shared_load_bits, m.ops()) + " | " +
             per_op(m.global_loads, m.global_load_bits, m.ops()) + " |";
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s %s\n", r.c.name.c_str(),
                r.c.shape.c_str(), r.p.plan.c_str(), a.id.c_str(), a.module.c_str(), r.p.tiling.c_str(),
                cell(a.registers).c_str(), cell(a.scalar_registers).c_str(), spill_cell(a).c_str(),
                cell(a.local_bytes).c_str(), cell(a.shared_bytes).c_str(), wave.c_str(), cell(a.occupancy).c_str(),
                cell(a.code_bytes).c_str(), loop.c_str());
  }
}

}  // namespace

void print_text(const Report& r) {
  std::printf("device: %s (%s)\n", r.device.c_str(), r.driver.c_str());
  if (!r.executables)
    std::printf("The driver has no VK_KHR_pipeline_executable_properties: modules and constants only, no "
                "statistics, no disassembly.\n");
  if (!r.pipelines.empty() && r.pipelines.front().statistics) {
    const Isa isa = r.pipelines.front().isa;
    std::printf("Compiler: %s. regs: %s; sregs: scalar registers (ACO); spills/fills: as the compiler counts them; "
                "local B: memory per invocation the compiler added (scratch, local memory); occupancy: %s.\n",
                isa == Isa::aco ? "ACO (AMD)" : isa == Isa::nak ? "NAK (NVIDIA)" : "Intel's (ANV)",
                isa == Isa::intel ? "the most registers live at once, at the SIMD width (wave)" : "vector registers per lane",
                occupancy_unit(isa));
  }
  std::printf("Per main-loop iteration (k/iter of the reduction); nested loops counted with their trip counts; FMA "
              "share = FMA instructions / all instructions (the gated figure), FMA/VALU = / vector-ALU "
              "instructions; in the matrix builds' loops, matrix instructions (and their multiply-adds per wave) instead, "
              "and loads are counted per op: per matrix instruction there, else per FMA. Case names: rhsT = rhs "
              "[G, n, k].\n");
  std::vector<Row> compute, decode, aux;
  for (const Case& c : r.cases)
    for (const CasePipeline& p : c.pipelines) {
      const Row row{c, p, r.of(p)};
      if (std::string(p.pipeline.role) != "op") aux.push_back(row);
      else (c.decode ? decode : compute).push_back(row);
    }
  print_kernels("Compute-bound cases:", compute);
  print_kernels("Decode-sized cases (a few rows per expert: bandwidth-bound, outside the FMA-share target):", decode);
  std::printf("\nAuxiliary pipelines (device metadata build, ordered combine, the routed backward's gradient pass, top-k):\n");
  std::printf("| case | plan | pipeline | module | regs | sregs | spills/fills | local B | shared B | code B |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : aux) {
    const Analysis& a = row.a;
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.c.name.c_str(), row.p.plan.c_str(),
                a.id.c_str(), a.module.c_str(), cell(a.registers).c_str(), cell(a.scalar_registers).c_str(),
                spill_cell(a).c_str(), cell(a.local_bytes).c_str(), cell(a.shared_bytes).c_str(),
                cell(a.code_bytes).c_str());
  }
  std::printf("\nPipelines (module, descriptor layout, specialization constants as NAME (constant_id) = value):\n");
  for (const Analysis& a : r.pipelines) {
    std::string cs;
    for (const Analysis::Constant& c : a.constants)
      cs += std::string(cs.empty() ? "" : ", ") + c.name + " (" + std::to_string(c.id) + ") = " + std::to_string(c.value);
    std::printf("  %s: %s.spv, %s layout, %s\n", a.id.c_str(), a.module.c_str(), a.split ? "split" : "plain", cs.c_str());
  }
  for (const Case& c : r.cases)
    if (!c.error.empty()) std::printf("  %s: not planned: %s\n", c.name.c_str(), c.error.c_str());
}

}  // namespace gpu_report
