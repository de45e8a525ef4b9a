// A gpu-report: the cases, each distinct pipeline's analysis once, and what fails the gate; printed as
// tables (report_text.cpp) or JSON (report_json.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis.hpp"
#include "cases.hpp"

namespace gpu_report {

struct Report {
  std::string device, driver;
  bool executables = false;  // the driver gave statistics and disassembly
  double min_fma_share = 0;
  std::vector<Case> cases;
  std::vector<Analysis> pipelines;  // each distinct pipeline once, P1, P2, ... in order of first use
  std::map<VkPipeline, size_t> index;
  std::vector<std::string> failures;  // compile errors, spills, FMA shares under the threshold
  const Analysis& of(const CasePipeline& p) const { return pipelines[index.at(p.pipeline.pipeline)]; }
};

// Whether the FMA-share threshold applies: a gmm or tgmm kernel of a compute-bound case with element-type
// weights (decode is bandwidth-bound; block formats dequantize in the loop), not on the matrix units.
bool gated(const Case& c, const CasePipeline& p);

// Plans every case on `ctx` (a compile-only context; `executables`: its pipelines captured statistics),
// analyses each distinct pipeline and gathers the failures.
Report make_report(vkgmm::Context& ctx, bool executables, const std::string& only, double min_fma_share);

void print_text(const Report& r);    // report_text.cpp
std::string to_json(const Report& r);  // report_json.cpp
// Writes every module vkgmm embeds (NAME.spv) and each pipeline's disassembly (P<n>.s) into `dir`;
// throws std::runtime_error naming a file it cannot write.
void dump(const Report& r, const std::string& dir);

}  // namespace gpu_report
