// `vkgmm gpu-report`: plans the bench's workloads on a compile-only context (no memory, no submission),
// asks the driver what it compiled (VK_KHR_pipeline_executable_properties) and prints, per pipeline, its
// module and constants, registers, spills, LDS, waves per SIMD, code size and the main loop's mix.
#include "gpu_report.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fail.hpp"
#include "flags.hpp"
#include "report.hpp"

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

}  // namespace

int gpu_report_main(int argc, char** argv) {
  if (tool::wants_help(argc, argv)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::string device, only, dump;
  bool json = false;
  double min_share = 0;
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value = a == "--device" || a == "--only" || a == "--dump" || a == "--min-fma-share";
    if (takes_value && i + 1 >= argc) return tool::fail(2, a + " needs a value");
    // A repeat would keep one of the values unseen (the last --device, a second --json for nothing).
    if ((takes_value || a == "--json") && !given.insert(a).second) return tool::fail(2, a + " given twice");
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
  // The report takes a while to build: a --dump that cannot be written fails now, not after it.
  if (!dump.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dump, ec))
      return tool::fail(2, "--dump: '" + dump + "' is not a directory" +
                               (std::filesystem::exists(dump, ec) ? "" : " (it does not exist; create it first)"));
    if (::access(dump.c_str(), W_OK | X_OK) != 0)
      return tool::fail(2, "--dump: directory '" + dump + "' is not writable: " + std::strerror(errno));
  }
  try {
    vkgmm::ContextOptions options;
    options.device = device;
    vkgmm::Context ctx = vkgmm::open_compile_only(options);
    const bool executables = vkgmm::internals::reads_executable_properties(ctx);
    const gpu_report::Report report = gpu_report::make_report(ctx, executables, only, min_share);
    if (!dump.empty()) gpu_report::dump(report, dump);
    if (json)
      std::printf("%s\n", gpu_report::to_json(report).c_str());
    else
      gpu_report::print_text(report);
    const std::vector<std::string>& failures = report.failures;
    for (const std::string& f : failures) std::fprintf(stderr, "vkgmm gpu-report: %s\n", f.c_str());
    return failures.empty() ? 0 : 1;
  } catch (const vkgmm::Error& e) {
    return tool::fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what());
  } catch (const std::exception& e) {
    return tool::fail(1, e.what());
  }
}
