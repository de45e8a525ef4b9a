// MPI's all-to-alls with counts and displacements in elements (MPI-3 takes them as int: a step whose
// exchange is larger than INT_MAX floats per rank is refused; MPI-4's MPI_Alltoallv_c would lift that).
#include "exchange.hpp"

#include <climits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ep {
namespace {

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

// Counts and displacements in elements of rows of `width` floats.
struct Layout {
  std::vector<int> counts, displs;
  int64_t total = 0;
};

Layout layout_of(const std::vector<int64_t>& rows, int64_t width) {
  Layout l;
  for (int64_t r : rows) {
    if (r < 0) throw std::runtime_error("all_to_all: a negative row count (" + std::to_string(r) + ")");
    // r <= (INT_MAX - total) / width, not r * width <= ...: the product itself must not overflow.
    if (width > 0 && r > (INT_MAX - l.total) / width)
      throw std::runtime_error("all_to_all: more than INT_MAX floats in one exchange: fewer --tokens per rank");
    const int64_t elements = r * width;
    l.counts.push_back(int(elements));
    l.displs.push_back(int(l.total));
    l.total += elements;
  }
  return l;
}

uint64_t bytes_to_others(const Layout& l, int self) {
  return uint64_t(l.total - l.counts[self]) * sizeof(float);
}

// Waits for every rank to arrive, then returns the time the exchange starts at.
double start_together(MPI_Comm comm, Traffic& traffic) {
  const double arrived = MPI_Wtime();
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  traffic.wait_seconds += start - arrived;
  return start;
}

}  // namespace

int64_t Counts::total_received() const { return std::accumulate(recv_rows.begin(), recv_rows.end(), int64_t(0)); }


Counts exchange_counts(MPI_Comm comm, const std::vector<int32_t>& rows_per_expert, int64_t experts_per_rank,
                       Traffic& traffic) {
  Counts c;
  MPI_Comm_size(comm, &c.ranks);
  c.experts_per_rank = experts_per_rank;
  if (int64_t(rows_per_expert.size()) != c.ranks * experts_per_rank)
    throw std::runtime_error("exchange_counts: " + std::to_string(rows_per_expert.size()) + " experts are not " +
                             std::to_string(experts_per_rank) + " per rank on " + std::to_string(c.ranks) + " ranks");
  c.recv_rows_of_expert.assign(rows_per_expert.size(), 0);
  const double start = start_together(comm, traffic);
  MPI_Alltoall(rows_per_expert.data(), int(experts_per_rank), MPI_INT32_T, c.recv_rows_of_expert.data(),
               int(experts_per_rank), MPI_INT32_T, comm);
  traffic.seconds += MPI_Wtime() - start;
  const uint64_t count_bytes = uint64_t(c.ranks - 1) * experts_per_rank * sizeof(int32_t);
  traffic.bytes_sent += count_bytes;
  traffic.bytes_received += count_bytes;

  c.send_rows.assign(c.ranks, 0);
  c.recv_rows.assign(c.ranks, 0);
  for (int r = 0; r < c.ranks; ++r)
    for (int64_t e = 0; e < experts_per_rank; ++e) {
      const int32_t sent = rows_per_expert[r * experts_per_rank + e];
      const int32_t received = c.recv_rows_of_expert[r * experts_per_rank + e];
      if (sent < 0 || received < 0)
        throw std::runtime_error("exchange_counts: a negative row count for expert " +
                                 std::to_string(r * experts_per_rank + e));
      c.send_rows[r] += sent;
      c.recv_rows[r] += received;
    }
  return c;
}

std::vector<float> all_to_all(MPI_Comm comm, const Counts& counts, Direction dir, const std::vector<float>& rows,
                              int64_t width, Traffic& traffic) {
  const bool forward = dir == Direction::to_experts;
  const Layout send = layout_of(forward ? counts.send_rows : counts.recv_rows, width);
  const Layout recv = layout_of(forward ? counts.recv_rows : counts.send_rows, width);
  if (int64_t(rows.size()) != send.total)
    throw std::runtime_error("all_to_all: " + std::to_string(rows.size()) + " floats to send, the counts say " +
                             std::to_string(send.total));
  std::vector<float> received(recv.total);
  const double start = start_together(comm, traffic);
  MPI_Alltoallv(rows.data(), send.counts.data(), send.displs.data(), MPI_FLOAT, received.data(), recv.counts.data(),
                recv.displs.data(), MPI_FLOAT, comm);
  traffic.seconds += MPI_Wtime() - start;
  const int self = rank_of(comm);
  traffic.bytes_sent += bytes_to_others(send, self);
  traffic.bytes_received += bytes_to_others(recv, self);
  return received;
}

}  // namespace ep
