#include "report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace ep {
namespace {

constexpr int kFields = 10;

std::array<double, kFields> pack(const RankFigures& f) {
  return {double(f.tokens), double(f.expert_rows), double(f.bytes_sent), double(f.bytes_received), f.wait_ms,
          f.all_to_all_ms,  f.vkgmm_ms,            f.staging_ms,         f.host_ms,                 f.step_ms};
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

void print_report(MPI_Comm comm, const RankFigures& mine) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const std::array<double, kFields> packed = pack(mine);
  std::vector<double> all(rank == 0 ? size_t(ranks) * kFields : 0);
  MPI_Gather(packed.data(), kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, comm);
  if (rank != 0) return;
  std::printf("| rank | tokens | expert rows | bytes sent | bytes received | wait ms | all-to-all ms | vkgmm ms | "
              "staging ms | host ms | step ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int r = 0; r < ranks; ++r) {
    const double* f = &all[size_t(r) * kFields];
    std::printf("| %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r, f[0], f[1], f[2],
                f[3], f[4], f[5], f[6], f[7], f[8], f[9]);
  }
  std::fflush(stdout);
}

}  // namespace ep
