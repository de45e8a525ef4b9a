// One training step of the expert-parallel layer on one rank: forward and backward, with the four
// all-to-alls between its tokens and the ranks that own their experts.
#pragma once

#include <mpi.h>

#include <vector>

#include "exchange.hpp"
#include "expert_shard.hpp"
#include "model.hpp"

namespace ep {

struct StepOutput {
  std::vector<float> y;    // [slice, d_out], the layer's output for the rank's tokens
  std::vector<float> d_x;  // [slice, d_model]
  std::vector<float> d_w;  // [experts_per_rank, d_model, d_out], the rank's experts' gradient
  int64_t expert_rows = 0;  // rows this rank's experts computed
  Traffic traffic;
  ShardTime shard;
  double seconds = 0;  // the whole step
};

// The check's own tests, on one rank. wrong_value: the rank makes one value it returns wrong, so that a
// check must fail whatever the routing. Where its experts received rows, the first value they return in
// the forward becomes a NaN, caught by the y check on the rank owning that token (the routing weight
// times a NaN is a NaN, however small the weight); where they received none, the first value of its d_W
// does, caught by its own d_W check (every rank holds at least one expert). stale_rows: its shard leaves
// an earlier step's rows and ids on the device (ExpertShard::forward's restage off), which the steps'
// different inputs must expose.
struct Fault {
  bool wrong_value = false, stale_rows = false;
};

// Collective over comm.
StepOutput expert_parallel_step(MPI_Comm comm, const Model& m, Slice s, ExpertShard& shard, Fault fault);

}  // namespace ep
