// Per-rank figures of a run, gathered on rank 0 and printed as one table.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace ep {

struct RankFigures {
  // Per step (the same every step).
  int64_t tokens = 0;       // the rank's slice
  int64_t expert_rows = 0;  // rows its experts computed (its own tokens' and the others')
  uint64_t bytes_sent = 0, bytes_received = 0;  // to and from other ranks, counts included
  // Medians over the steps, milliseconds.
  double wait_ms = 0, all_to_all_ms = 0, vkgmm_ms = 0, staging_ms = 0, host_ms = 0, step_ms = 0;
};

double median(std::vector<double> v);

// Collective: every rank passes its figures; rank 0 prints the table.
void print_report(MPI_Comm comm, const RankFigures& mine);

}  // namespace ep
