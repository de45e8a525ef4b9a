#include "bench.hpp"

#include <cstdio>

int bench_main(int, char**) {
  std::fprintf(stderr, "vkgmm bench: not built yet\n");
  return 1;
}
