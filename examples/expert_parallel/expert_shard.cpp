#include "expert_shard.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ep {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Host vectors into and out of vkgmm's host-visible buffers: the staging an MPI without GPU support needs.
template <typename T>
void stage_in(vkgmm::Buffer& b, const std::vector<T>& v, ShardTime& t) {
  const auto start = std::chrono::steady_clock::now();
  b.upload(v.data(), v.size() * sizeof(T));
  t.staging += seconds_since(start);
}

std::vector<float> stage_out(const vkgmm::Buffer& b, int64_t count, ShardTime& t) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> v(count);
  b.download(v.data(), v.size() * sizeof(float));
  t.staging += seconds_since(start);
  return v;
}

// The forward over this rank's window of experts: each received row one slot, routed by its expert id.
vkgmm::GmmProblem forward_problem(const ShardShape& s) {
  vkgmm::GmmProblem p;
  p.m = s.capacity;
  p.k = s.d_model;
  p.n = s.d_out;
  p.routing.top_k = 1;
  p.routing.num_experts = s.experts;
  p.group_offset = s.first_expert;
  p.num_rhs_groups = s.experts_per_rank;
  return p;
}

}  // namespace

ExpertShard::ExpertShard(vkgmm::Context& ctx, const ShardShape& shape, const std::vector<float>& weights)
    : ctx_(ctx), shape_(shape), forward_(ctx, forward_problem(shape)), backward_(ctx, forward_problem(shape)) {
  const vkgmm::OperandSizes f = forward_.sizes();
  const vkgmm::GmmBackwardSizes b = backward_.sizes();
  if (weights.size() * sizeof(float) != f.rhs)
    throw std::invalid_argument("ExpertShard: weights: " + std::to_string(weights.size()) + " floats, the shard has " +
                                std::to_string(f.rhs / sizeof(float)));
  weights_ = ctx.create_buffer(f.rhs);
  weights_.upload(weights.data(), f.rhs);
  x_rows_ = ctx.create_buffer(f.lhs);
  y_rows_ = ctx.create_buffer(f.out);
  ids_ = ctx.create_buffer(shape.capacity * sizeof(int32_t));
  forward_work_ = ctx.create_buffer(std::max<VkDeviceSize>(forward_.workspace_bytes(), 4));
  backward_work_ = ctx.create_buffer(std::max<VkDeviceSize>(backward_.workspace_bytes(), 4));
  status_ = ctx.create_buffer(sizeof(uint32_t));
  d_y_rows_ = ctx.create_buffer(b.d_out);
  d_x_rows_ = ctx.create_buffer(b.d_lhs);
  d_weights_ = ctx.create_buffer(b.d_rhs);
}

void ExpertShard::run(const std::function<void(VkCommandBuffer)>& record, ShardTime& t) {
  const auto start = std::chrono::steady_clock::now();
  ctx_.submit_and_wait(record);
  t.vkgmm += seconds_since(start);
  // The status word is 0 when every id named an expert; anything else is a bug in the exchange.
  uint32_t status = 0;
  status_.download(&status, sizeof status);
  if (status != 0) throw std::runtime_error("ExpertShard: the device status word is " + std::to_string(status));
}

std::vector<float> ExpertShard::forward(const std::vector<float>& rows, const std::vector<int32_t>& experts,
                                        ShardTime& t, bool restage) {
  rows_ = int64_t(rows.size()) / shape_.d_model;
  if (rows_ > shape_.capacity)
    throw std::runtime_error("ExpertShard: " + std::to_string(rows_) + " rows received, capacity " +
                             std::to_string(shape_.capacity));
  if (int64_t(experts.size()) != rows_)
    throw std::runtime_error("ExpertShard: experts: " + std::to_string(experts.size()) + " ids for " +
                             std::to_string(rows_) + " rows");
  std::vector<int32_t> ids(shape_.capacity, -1);  // rows past those received are no expert's
  std::copy(experts.begin(), experts.end(), ids.begin());
  if (restage) {
    stage_in(ids_, ids, t);
    stage_in(x_rows_, rows, t);
  }

  run([&](VkCommandBuffer cb) {
    vkgmm::GmmOperands ops;
    ops.lhs = x_rows_.view();
    ops.rhs = weights_.view();
    ops.out = y_rows_.view();
    ops.ids = ids_.view();
    ops.workspace = forward_work_.view();
    ops.status = status_.view();
    forward_.record(cb, ops);
  }, t);

  return stage_out(y_rows_, rows_ * shape_.d_out, t);
}

std::vector<float> ExpertShard::backward(const std::vector<float>& d_out, ShardTime& t) {
  if (int64_t(d_out.size()) != rows_ * shape_.d_out)
    throw std::runtime_error("ExpertShard: backward: d_out has " + std::to_string(d_out.size()) +
                             " floats, the forward's rows need " + std::to_string(rows_ * shape_.d_out));
  stage_in(d_y_rows_, d_out, t);

  // x rows and their ids are still on the device from the forward.
  run([&](VkCommandBuffer cb) {
    vkgmm::GmmBackwardOperands ops;
    ops.lhs = x_rows_.view();
    ops.rhs = weights_.view();
    ops.d_out = d_y_rows_.view();
    ops.d_lhs = d_x_rows_.view();
    ops.d_rhs = d_weights_.view();
    ops.ids = ids_.view();
    ops.workspace = backward_work_.view();
    ops.status = status_.view();
    backward_.record(cb, ops);
  }, t);

  return stage_out(d_x_rows_, rows_ * shape_.d_model, t);
}

std::vector<float> ExpertShard::d_weights(ShardTime& t) const {
  return stage_out(d_weights_, shape_.experts_per_rank * shape_.d_model * shape_.d_out, t);
}

}  // namespace ep
