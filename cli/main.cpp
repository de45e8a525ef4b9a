// The `vkgmm` command: dispatch to run, info, bench or quantize. Each subcommand gets argv from its own
// name on, so argv[0] is "run", "info", "bench" or "quantize".
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "bench.hpp"
#include "fail.hpp"
#include "gpu_report.hpp"
#include "info.hpp"
#include "quantize.hpp"
#include "run.hpp"
#include "vkgmm/vkgmm.h"

namespace {

const char kUsage[] =
    "usage: vkgmm <command> [options]\n"
    "\n"
    "commands:\n"
    "  run gmm|tgmm   run one grouped matmul on .npy files (vkgmm run --help)\n"
    "  info           show the device, its limits and the features vkgmm uses (vkgmm info --help)\n"
    "  bench          measure gmm / tgmm throughput (vkgmm bench --help)\n"
    "  gpu-report     the compiled code of vkgmm's pipelines on a device, RADV's null GPUs included (vkgmm gpu-report --help)\n"
    "  quantize       expert weights (.npy) to GGUF's block formats (vkgmm quantize --help)\n"
    "  help [command] show this, or a command's help\n"
    "  --version      the library's version\n"
    "\n"
    "Environment: VKGMM_DEVICE (device index or name substring), VKGMM_VALIDATE=1 (validation layer).\n";

int dispatch(const std::string& cmd, int argc, char** argv) {
  if (cmd == "run") return run_main(argc, argv);
  if (cmd == "info") return info_main(argc, argv);
  if (cmd == "bench") return bench_main(argc, argv);
  if (cmd == "quantize") return quantize_main(argc, argv);
  if (cmd == "gpu-report") return gpu_report_main(argc, argv);
  return -1;
}

}  // namespace

static int run_command(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    const std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || (cmd == "help" && argc == 2)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (cmd == "--version") {
      if (argc > 2) return tool::fail(2, "--version takes no arguments, got '" + std::string(argv[2]) + "'");
      std::printf("vkgmm %s\n", vkgmm_version_string());
      return 0;
    }
    if (cmd == "help") {
      // `vkgmm help run` is `vkgmm run --help`.
      if (argc > 3) {
        return tool::fail(2, "help takes at most one command");
      }
      // Help wins, as everywhere: `vkgmm help --help` (or -h, or --version) is this usage, not an error.
      const std::string topic = argv[2];
      if (topic == "help" || topic == "--help" || topic == "-h" || topic == "--version") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      char help_flag[] = "--help";
      char* sub_argv[] = {argv[2], help_flag, nullptr};
      const int status = dispatch(argv[2], 2, sub_argv);
      if (status >= 0) return status;
    } else {
      const int status = dispatch(cmd, argc - 1, argv + 1);
      if (status >= 0) return status;
    }
    return tool::fail(2, "unknown command '" + std::string(cmd == "help" ? argv[2] : cmd) +
                             "' (expected run, info, bench, gpu-report, quantize or help)");
  } catch (const std::exception& e) {
    // The subcommands report their own errors; this is the last line of defence, still one line.
    return tool::fail(1, e.what());
  }
}

int main(int argc, char** argv) {
  // A reader that closes a pipe or FIFO early is a write error (EPIPE: one line, exit 1), not a signal:
  // --out's writes check theirs, and what went to stdout is checked here.
  std::signal(SIGPIPE, SIG_IGN);
  const int status = run_command(argc, argv);
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "vkgmm: error: writing to stdout: %s\n", errno ? std::strerror(errno) : "failed");
    return status ? status : 1;
  }
  return status;
}
