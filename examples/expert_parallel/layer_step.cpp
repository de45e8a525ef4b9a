#include "layer_step.hpp"

#include <algorithm>
#include <limits>

namespace ep {

namespace {
// Each received row's expert: rows arrive grouped by sender, each sender's sorted by expert.
std::vector<int32_t> received_experts(const Counts& counts, int64_t first_expert) {
  std::vector<int32_t> ids;
  ids.reserve(size_t(counts.total_received()));
  for (int s = 0; s < counts.ranks; ++s)
    for (int64_t e = 0; e < counts.experts_per_rank; ++e)
      ids.insert(ids.end(), size_t(counts.recv_rows_of_expert[size_t(s * counts.experts_per_rank + e)]),
                 int32_t(first_expert + e));
  return ids;
}
}  // namespace

StepOutput expert_parallel_step(MPI_Comm comm, const Model& m, Slice s, ExpertShard& shard, Fault fault) {
  const double start = MPI_Wtime();
  const int64_t dm = m.shape.d_model, dn = m.shape.d_out;
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  StepOutput o;

  // Forward. Route the slice's tokens; a stable sort by expert leaves the rows grouped by the rank
  // that owns the expert (experts are laid out rank by rank), each destination's sorted by expert.
  const moe::Routing routing = route(m, s);
  const Counts counts = exchange_counts(comm, routing.group_sizes, m.shape.experts / ranks, o.traffic);
  const std::vector<float> x_in = all_to_all(comm, counts, Direction::to_experts,
                                             moe::permute(routing, rows_of(m.x, s, dm), dm), dm, o.traffic);
  // The rows stay in the order they arrived: the routed gmm gathers them by expert on the device.
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<float> y_rows =
      shard.forward(x_in, received_experts(counts, rank * counts.experts_per_rank), o.shard, !fault.stale_rows);
  o.expert_rows = counts.total_received();
  const bool corrupt_forward = fault.wrong_value && !y_rows.empty();
  if (corrupt_forward) y_rows[0] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y_back = all_to_all(comm, counts, Direction::back_to_tokens, y_rows, dn, o.traffic);
  o.y = moe::unpermute(routing, y_back, s.size(), dn);  // y[t] = sum over t's slots of weight * row

  // Backward. A slot's output row received weight * d_y[t]: that is the cotangent its expert sees,
  // sent the way the tokens went (the same counts).
  std::vector<float> d_rows = moe::permute(routing, rows_of(m.d_y, s, dn), dn);
  for (size_t i = 0; i < routing.weight_of.size(); ++i)
    std::transform(d_rows.begin() + i * dn, d_rows.begin() + (i + 1) * dn, d_rows.begin() + i * dn,
                   [&](float v) { return routing.weight_of[i] * v; });
  const std::vector<float> d_in = all_to_all(comm, counts, Direction::to_experts, d_rows, dn, o.traffic);
  const std::vector<float> d_x_rows = shard.backward(d_in, o.shard);
  o.d_w = shard.d_weights(o.shard);
  if (fault.wrong_value && !corrupt_forward && !o.d_w.empty()) o.d_w[0] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> d_x_back = all_to_all(comm, counts, Direction::back_to_tokens, d_x_rows, dm, o.traffic);
  // d_x[t] = sum over t's slots of the returned rows: the weights are already in them.
  moe::Routing unweighted = routing;
  std::fill(unweighted.weight_of.begin(), unweighted.weight_of.end(), 1.f);
  o.d_x = moe::unpermute(unweighted, d_x_back, s.size(), dm);
  o.seconds = MPI_Wtime() - start;
  return o;
}

}  // namespace ep
