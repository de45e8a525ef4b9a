#include "report.hpp"

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <stdexcept>


namespace gpu_report {

namespace {

std::string fixed(double v, int decimals) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

void write_file(const std::string& path, const char* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(data, std::streamsize(bytes));
  if (!f) throw std::runtime_error("--dump: cannot write " + path);
}

}  // namespace

bool gated(const Case& c, const CasePipeline& p) {
  // The matrix builds' main loops are matrix instructions, not FMAs: the FMA share does not measure them.
  // A later pass (gmm's smaller tiles for skewed groups' remainders) carries few of the FLOPs: its
  // share is reported, not gated.
  return p.pipeline.role == "op" && !p.pipeline.pass && !c.decode && !c.quantized && !p.pipeline.matrix;
}

Report make_report(vkgmm::Context& ctx, bool executables, const std::string& only, double min_fma_share) {
  Report r;
  r.device = ctx.info().name;
  r.driver = ctx.info().driver;
  r.executables = executables;
  r.min_fma_share = min_fma_share;
  r.cases = plan_cases(ctx, only);
  for (const Case& c : r.cases)
    for (const CasePipeline& p : c.pipelines)
      if (!r.index.count(p.pipeline.pipeline)) {
        Analysis a = analyse(ctx.device(), p.pipeline, executables);
        a.id = std::string("P") + std::to_string(r.pipelines.size() + 1);
        r.index[p.pipeline.pipeline] = r.pipelines.size();
        r.pipelines.push_back(std::move(a));
      }

  if (min_fma_share > 0 && !executables)
    r.failures.push_back("--min-fma-share: the driver gives no statistics or disassembly to check it against");
  for (const Case& c : r.cases)
    if (!c.error.empty()) r.failures.push_back(c.name + ": " + c.error);
  for (const Analysis& a : r.pipelines)
    if (a.spilled())
      r.failures.push_back(a.id + " (" + a.module + ") spills: " + fixed(std::max(a.spills, 0.0), 0) + " spills, " +
                           fixed(std::max(a.fills, 0.0), 0) + " fills, " + fixed(std::max(a.local_bytes, 0.0), 0) +
                           " bytes of local memory per invocation");
    else if (a.mix.local_loads + a.mix.local_stores > 0)
      r.failures.push_back(a.id + " (" + a.module + ") main loop reads or writes local memory: " +
                           fixed(a.mix.local_loads, 0) + " loads, " + fixed(a.mix.local_stores, 0) + " stores per iteration");
  if (min_fma_share > 0 && executables)
    for (const Case& c : r.cases)
      for (const CasePipeline& p : c.pipelines) {
        const Analysis& a = r.of(p);
        if (gated(c, p) && a.mix.fma_share() < min_fma_share)
          r.failures.push_back(c.name + " " + p.plan + " (" + a.id + "): main-loop FMA share " +
                               fixed(100 * a.mix.fma_share(), 1) + " % < " + fixed(100 * min_fma_share, 1) + " %");
      }
  return r;
}

void dump(const Report& r, const std::string& dir) {
  for (const vkgmm::internals::SpirvModule& m : vkgmm::internals::spirv_modules())
    write_file(dir + "/" + m.name + ".spv", reinterpret_cast<const char*>(m.code), m.words * 4);
  for (const Analysis& a : r.pipelines) write_file(dir + "/" + a.id + ".s", a.disassembly.data(), a.disassembly.size());
}

}  // namespace gpu_report
