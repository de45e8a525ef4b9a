// The all-to-alls of expert parallelism over MPI: which rank sends how many rows of each expert to whom
// (exchanged first), then the rows themselves, there and back, with the bytes and seconds they took.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace ep {

// What one rank's exchanges cost: the bytes that crossed to or from other ranks (a rank's rows to itself
// are a local copy and not counted), and wall time: in a barrier before each exchange (waiting for the
// slowest peer to get there: load imbalance, not transport) and in the exchange itself. The barrier is
// the example's, to tell the two apart; an engine would not add it.
struct Traffic {
  double wait_seconds = 0, seconds = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
};

// The counts of one step, as every rank knows them after exchange_counts(): rows are sent grouped by
// destination rank, and within one destination sorted by expert, which is how a stable sort by expert
// leaves them (expert e lives on rank e / experts_per_rank).
struct Counts {
  int ranks = 0;
  int64_t experts_per_rank = 0;
  // Sums of int32 counts, kept in 64 bits; the exchanges refuse what MPI's int counts cannot hold.
  std::vector<int64_t> send_rows;            // [ranks]: rows this rank sends to each rank
  std::vector<int64_t> recv_rows;            // [ranks]: rows this rank receives from each rank
  std::vector<int32_t> recv_rows_of_expert;  // [ranks, experts_per_rank]: from rank s, for local expert e

  int64_t total_received() const;
};

// rows_per_expert [experts]: this rank's rows for every expert (the sizes of its stable sort by expert).
// One MPI_Alltoall of experts_per_rank ints per rank pair.
Counts exchange_counts(MPI_Comm comm, const std::vector<int32_t>& rows_per_expert, int64_t experts_per_rank,
                       Traffic& traffic);

enum class Direction {
  to_experts,      // send: send_rows per destination; receive: recv_rows per source
  back_to_tokens,  // the reverse: what was received goes back to where it came from
};

// One MPI_Alltoallv of rows of `width` floats, grouped by peer rank on both sides.
std::vector<float> all_to_all(MPI_Comm comm, const Counts& counts, Direction dir, const std::vector<float>& rows,
                              int64_t width, Traffic& traffic);

}  // namespace ep
