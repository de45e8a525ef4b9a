// `vkgmm bench`: the benchmark users run first (vkgmm bench --help; bench/README.md).
#pragma once

// argv[0] is the subcommand's own name ("bench"). Returns 0; 1 when a result is wrong (refused, never
// timed) or the device fails; 2 for a bad command line or a workload the library refuses.
int bench_main(int argc, char** argv);
