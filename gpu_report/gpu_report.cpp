// `vkgmm gpu-report`: plans the bench's workloads on a compile-only context (no memory, no submission),
// asks the driver what it compiled (VK_KHR_pipeline_executable_properties) and prints, per pipeline, its
// module and constants, registers, spills, LDS, waves per SIMD, code size and the main loop's mix.
#include "gpu_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analysis.hpp"
#include "cases.hpp"
#include "context_impl.hpp"
#include "fail.hpp"
#include "flags.hpp"
#include "json.hpp"
#include "shader_modules.hpp"

namespace {

const char kUsage[] =
    "usage: vkgmm gpu-report --device NAME|INDEX [--json] [--min-fma-share X] [--only TEXT] [--dump DIR]\n"
    "\n"
    "Plans the bench's workloads (every preset in f32, f16 and bf16, rhs transposed or not, the backward,\n"
    "tgmm, ids routing with and without bias + SwiGLU, the block formats) on the device as a run would, but\n"
    "compile-only: no device memory, nothing submitted, so RADV's null devices work\n"
    "(RADV_FORCE_FAMILY=navi21|gfx1100|vega10 vkgmm gpu-report --device RADV). Per pipeline: its SPIR-V\n"
    "module and specialization constants, then (where the driver has VK_KHR_pipeline_executable_properties)\n"
    "VGPRs, SGPRs, spills, LDS bytes, waves per SIMD, code size, and from the disassembly the main loop's\n"
    "instructions per iteration (nested loops times their trip counts), the FMA share, and shared-memory and\n"
    "global loads per FMA with their widths. Decode-sized cases (a few rows per expert) are listed apart.\n"
    "\n"
    "  --device NAME|INDEX  the device (required: a name substring or an index, as $VKGMM_DEVICE)\n"
    "  --json               one JSON object instead of the tables\n"
    "  --min-fma-share X    fail (exit 1) when a gmm or tgmm main loop of a compute-bound case with element-type\n"
    "                       weights has an FMA share below X (0..1; default 0: no threshold)\n"
    "  --only TEXT          only the cases whose name contains TEXT\n"
    "  --dump DIR           write each module (NAME.spv) and each pipeline's disassembly (P<n>.s) into DIR\n"
    "\n"
    "Exits 1 when a case fails to compile, a pipeline spills, or an FMA share is under --min-fma-share.\n";

using gpu_report::Analysis;
using gpu_report::Case;
using tool::json_string;

std::string num(double v, int decimals = 0) {
  if (v < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string widths(const std::map<int, double>& bits, double per) {
  std::string s;
  for (const auto& [b, n] : bits) {
    if (n <= 0) continue;
    s += std::string(s.empty() ? "" : " ") + num(n / per, 2) + "xb" + std::to_string(b);
  }
  return s.empty() ? "0" : s;
}

std::string json_map(const std::map<int, double>& bits) {
  std::string s = "{";
  for (const auto& [b, n] : bits) s += std::string(s.size() > 1 ? ", " : "") + json_string(std::to_string(b)) + ": " + num(n, 3);
  return s + "}";
}

struct Row {
  const Case* c;
  const gpu_report::CasePipeline* p;
  const Analysis* a;
};

void print_table(const char* title, const std::vector<Row>& rows) {
  std::printf("\n%s\n", title);
  std::printf("| case | m, k, n, G (ids: T, k, n, E, top_k) | plan | pipeline | module | tiling | VGPRs | SGPRs | spills | LDS B | wave | waves/SIMD | code B | instr/iter | k/iter | FMA/iter | FMA share | FMA/VALU | LDS loads/FMA (bits) | global loads/FMA (bits) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const Analysis& a = *r.a;
    const gpu_report::Mix& m = a.mix;
    const double f = m.fma > 0 ? m.fma : 1;
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                r.c->name.c_str(), r.c->shape.c_str(), r.p->plan.c_str(), a.id.c_str(), a.module.c_str(),
                r.p->tiling.c_str(), num(a.vgprs).c_str(), num(a.sgprs).c_str(),
                a.statistics ? num(a.spilled_vgprs + a.spilled_sgprs).c_str() : "-", num(a.lds).c_str(),
                a.wave_size ? std::to_string(a.wave_size).c_str() : "-", num(a.waves).c_str(), num(a.code_size).c_str(), m.found ? num(m.instructions).c_str() : "-",
                m.k_per_iteration ? std::to_string(m.k_per_iteration).c_str() : "-",
                m.found ? num(m.fma).c_str() : "-", m.found ? num(100 * m.fma_share(), 1).append(" %").c_str() : "-",
                m.found ? num(100 * m.fma_valu_share(), 1).append(" %").c_str() : "-",
                m.found ? (num(m.shared_loads / f, 3) + " (" + widths(m.shared_load_bits, f) + ")").c_str() : "-",
                m.found ? (num(m.global_loads / f, 3) + " (" + widths(m.global_load_bits, f) + ")").c_str() : "-");
  }
}

std::string analysis_json(const Analysis& a) {
  std::string s = "{\"id\": " + json_string(a.id) + ", \"role\": " + json_string(a.role) +
                  ", \"module\": " + json_string(a.module) + ", \"constants\": [";
  for (size_t i = 0; i < a.constants.size(); ++i)
    s += std::string(i ? ", " : "") + "{\"id\": " + std::to_string(a.constants[i].id) + ", \"name\": " +
         json_string(a.constants[i].name) + ", \"value\": " + std::to_string(a.constants[i].value) + "}";
  s += "], \"wave_size\": " + std::to_string(a.wave_size) + ", \"statistics\": ";
  if (!a.statistics) return s + "null, \"main_loop\": null}";
  s += "{";
  for (size_t i = 0; i < a.all_statistics.size(); ++i)
    s += std::string(i ? ", " : "") + json_string(a.all_statistics[i].first) + ": " + num(a.all_statistics[i].second);
  s += "}, \"main_loop\": ";
  const gpu_report::Mix& m = a.mix;
  if (!m.found) return s + "null}";
  s += "{\"instructions\": " + num(m.instructions) + ", \"k_per_iteration\": " + std::to_string(m.k_per_iteration) +
       ", \"fma\": " + num(m.fma) + ", \"fma_work\": " + num(m.fma_work) + ", \"fma_share\": " + num(m.fma_share(), 4) +
       ", \"fma_valu_share\": " + num(m.fma_valu_share(), 4) +
       ", \"valu\": " + num(m.valu) + ", \"salu\": " + num(m.salu) + ", \"branches\": " + num(m.branches) +
       ", \"waits\": " + num(m.waits) + ", \"barriers\": " + num(m.barriers) + ", \"scalar_loads\": " +
       num(m.scalar_loads) + ", \"shared_loads\": " + num(m.shared_loads) + ", \"shared_stores\": " +
       num(m.shared_stores) + ", \"shared_load_bits\": " + json_map(m.shared_load_bits) +
       ", \"shared_bytes\": " + num(m.shared_bytes()) + ", \"global_loads\": " + num(m.global_loads) +
       ", \"global_load_bits\": " + json_map(m.global_load_bits) + ", \"global_bytes\": " + num(m.global_bytes()) +
       ", \"nested_loops\": " + std::to_string(m.nested_loops) + ", \"unknown_trip_counts\": " +
       std::to_string(m.unknown_trips) + "}}";
  return s;
}

}  // namespace

int gpu_report_main(int argc, char** argv) {
  if (tool::wants_help(argc, argv)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::string device, only, dump;
  bool json = false;
  double min_share = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value = a == "--device" || a == "--only" || a == "--dump" || a == "--min-fma-share";
    if (takes_value && i + 1 >= argc) return tool::fail(2, a + " needs a value");
    if (a == "--device") device = argv[++i];
    else if (a == "--only") only = argv[++i];
    else if (a == "--dump") dump = argv[++i];
    else if (a == "--json") json = true;
    else if (a == "--min-fma-share") {
      const std::string v = argv[++i];
      char* end = nullptr;
      min_share = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end || !(min_share >= 0 && min_share <= 1))
        return tool::fail(2, "--min-fma-share: '" + v + "' is not a number in [0, 1]");
    } else {
      return tool::fail(2, "unknown argument '" + a + "' for gpu-report (see vkgmm gpu-report --help)");
    }
  }
  // Never the default device: RADV_FORCE_FAMILY makes RADV's null device enumerate as a discrete GPU.
  if (device.empty()) return tool::fail(2, "--device: required (a device name substring or index)");
  try {
    vkgmm::ContextOptions options;
    options.device = device;
    vkgmm::Context ctx = vkgmm::open_compile_only(options);
    const bool executables = vkgmm::ContextInternals::of(ctx).dev.executable_properties;
    const std::vector<Case> cases = gpu_report::plan_cases(ctx, only);

    // Each distinct pipeline once, named in order of first use.
    std::map<VkPipeline, Analysis> analyses;
    std::vector<VkPipeline> order;
    for (const Case& c : cases)
      for (const auto& p : c.pipelines)
        if (!analyses.count(p.pipeline.pipeline)) {
          Analysis a = gpu_report::analyse(ctx.device(), p.pipeline, executables);
          a.id = "P" + std::to_string(order.size() + 1);
          analyses.emplace(p.pipeline.pipeline, std::move(a));
          order.push_back(p.pipeline.pipeline);
        }

    std::vector<std::string> failures;
    if (min_share > 0 && !executables)
      failures.push_back("--min-fma-share: the driver gives no statistics or disassembly to check it against");
    for (const Case& c : cases)
      if (!c.error.empty()) failures.push_back(c.name + ": " + c.error);
    for (VkPipeline p : order)
      if (analyses[p].spills())
        failures.push_back(analyses[p].id + " (" + analyses[p].module + ") spills: " +
                           num(analyses[p].spilled_vgprs) + " VGPRs, " + num(analyses[p].spilled_sgprs) + " SGPRs, " +
                           num(analyses[p].scratch) + " bytes of scratch");
    std::vector<Row> compute, decode, aux;
    for (const Case& c : cases)
      for (const auto& p : c.pipelines) {
        const Analysis& a = analyses[p.pipeline.pipeline];
        const Row r{&c, &p, &a};
        if (std::string(p.pipeline.role) != "op") aux.push_back(r);
        else (c.decode ? decode : compute).push_back(r);
        const bool gated = std::string(p.pipeline.role) == "op" && !c.decode && !c.quantized;
        if (gated && min_share > 0 && executables && a.mix.fma_share() < min_share)
          failures.push_back(c.name + " " + p.plan + " (" + a.id + "): main-loop FMA share " +
                             num(100 * a.mix.fma_share(), 1) + " % < " + num(100 * min_share, 1) + " %");
      }

    if (!dump.empty()) {
      for (const vkgmm::EmbeddedModule& m : vkgmm::embedded_op_modules()) {
        std::ofstream f(dump + "/" + m.name + ".spv", std::ios::binary);
        f.write(reinterpret_cast<const char*>(m.code.code), std::streamsize(m.code.words * 4));
        if (!f) return tool::fail(1, "--dump: cannot write " + dump + "/" + m.name + ".spv");
      }
      for (const auto& [name, code] : {std::pair{"metadata", vkgmm::metadata_shader()}, {"combine", vkgmm::combine_shader()}}) {
        std::ofstream f(dump + "/" + name + ".spv", std::ios::binary);
        f.write(reinterpret_cast<const char*>(code.code), std::streamsize(code.words * 4));
      }
      for (VkPipeline p : order) {
        std::ofstream f(dump + "/" + analyses[p].id + ".s");
        f << analyses[p].disassembly;
      }
    }

    const vkgmm::DeviceInfo& info = ctx.info();
    if (json) {
      std::string s = "{\"device\": " + json_string(info.name) + ", \"driver\": " + json_string(info.driver) +
                      ", \"executable_properties\": " + (executables ? "true" : "false") +
                      ", \"min_fma_share\": " + num(min_share, 3) + ", \"pipelines\": [";
      for (size_t i = 0; i < order.size(); ++i) s += std::string(i ? ", " : "") + analysis_json(analyses[order[i]]);
      s += "], \"cases\": [";
      for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        s += std::string(i ? ", " : "") + "{\"name\": " + json_string(c.name) + ", \"shape\": " + json_string(c.shape) +
             ", \"decode\": " + (c.decode ? "true" : "false") + ", \"quantized\": " + (c.quantized ? "true" : "false") +
             ", \"error\": " + (c.error.empty() ? "null" : json_string(c.error)) + ", \"pipelines\": [";
        for (size_t j = 0; j < c.pipelines.size(); ++j)
          s += std::string(j ? ", " : "") + "{\"plan\": " + json_string(c.pipelines[j].plan) + ", \"role\": " +
               json_string(c.pipelines[j].pipeline.role) + ", \"tiling\": " + json_string(c.pipelines[j].tiling) +
               ", \"pipeline\": " + json_string(analyses[c.pipelines[j].pipeline.pipeline].id) + "}";
        s += "]}";
      }
      s += "], \"failures\": [";
      for (size_t i = 0; i < failures.size(); ++i) s += std::string(i ? ", " : "") + json_string(failures[i]);
      std::printf("%s]}\n", s.c_str());
    } else {
      std::printf("device: %s (%s)\n", info.name.c_str(), info.driver.c_str());
      if (!executables)
        std::printf("The driver has no VK_KHR_pipeline_executable_properties: modules and constants only, no "
                    "statistics, no disassembly.\n");
      std::printf("Per main-loop iteration (k/iter of the reduction); nested loops counted with their trip "
                  "counts; FMA share = FMA instructions / all instructions (the gated figure), FMA/VALU = / vector-ALU instructions. Case names: rhsT = rhs [G, n, k].\n");
      print_table("Compute-bound cases:", compute);
      print_table("Decode-sized cases (a few rows per expert: bandwidth-bound, outside the FMA-share target):", decode);
      std::printf("\nAuxiliary pipelines (device metadata build, ordered combine):\n");
      std::printf("| case | plan | pipeline | module | VGPRs | SGPRs | spills | LDS B | code B |\n|---|---|---|---|---|---|---|---|---|\n");
      for (const Row& r : aux)
        std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.c->name.c_str(), r.p->plan.c_str(),
                    r.a->id.c_str(), r.a->module.c_str(), num(r.a->vgprs).c_str(), num(r.a->sgprs).c_str(),
                    r.a->statistics ? num(r.a->spilled_vgprs + r.a->spilled_sgprs).c_str() : "-",
                    num(r.a->lds).c_str(), num(r.a->code_size).c_str());
      std::printf("\nPipelines (module, specialization constants as NAME (constant_id) = value):\n");
      for (VkPipeline p : order) {
        const Analysis& a = analyses[p];
        std::string cs;
        for (const Analysis::Constant& c : a.constants)
          cs += std::string(cs.empty() ? "" : ", ") + c.name + " (" + std::to_string(c.id) + ") = " + std::to_string(c.value);
        std::printf("  %s: %s.spv, %s\n", a.id.c_str(), a.module.c_str(), cs.c_str());
      }
      for (const Case& c : cases)
        if (!c.error.empty()) std::printf("  %s: not planned: %s\n", c.name.c_str(), c.error.c_str());
    }
    for (const std::string& f : failures) std::fprintf(stderr, "vkgmm gpu-report: %s\n", f.c_str());
    return failures.empty() ? 0 : 1;
  } catch (const vkgmm::Error& e) {
    return tool::fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what());
  } catch (const std::exception& e) {
    return tool::fail(1, e.what());
  }
}
