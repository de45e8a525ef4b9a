// A model layer's training step on the device (see train.hpp).
#include "train.hpp"

#include <cmath>
#include <random>

#include "runner.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"

namespace bench {

vkgmm::MoeLayerProblem train_problem(const ModelLayer& l) {
  vkgmm::MoeLayerProblem p;
  p.tokens = l.tokens;
  p.d_model = l.up.k;
  p.d_ff = l.up.n_out();
  p.num_experts = l.up.groups;
  p.top_k = l.up.top_k;
  p.activation = l.up.activation;
  p.up_bias = p.down_bias = l.up.bias;
  p.dtype = l.up.dtype;
  p.weight_type = l.up.rhs_type();
  p.down_weight_type = l.down.rhs_type();
  return p;
}

namespace {

// `count` values uniform in [-1, 1) * sqrt(3 / fan_in), of variance 1 / fan_in, rounded to t.
std::vector<float> scaled_values(size_t count, int64_t fan_in, vkgmm::DType t, std::mt19937& rng) {
  std::vector<float> v = random_values(count, vkgmm::DType::f32, rng);
  const float s = std::sqrt(3.0f / float(fan_in));
  for (float& e : v) e = vkgmm::round_to(t, e * s);
  return v;
}

// An expert tensor [experts, rows, cols] of weights of type t, its values into `values` (a block format:
// cols along its blocks, `values` what the blocks hold), as a device buffer.
vkgmm::Buffer expert_weights(vkgmm::Context& ctx, vkgmm::DType t, int64_t experts, int64_t rows, int64_t cols,
                             int64_t fan_in, std::mt19937& rng, std::vector<float>& values) {
  const size_t count = size_t(experts * rows * cols);
  if (!vkgmm::is_quantized(t)) {
    values = scaled_values(count, fan_in, t, rng);
    return upload(ctx, t, values);
  }
  const std::vector<float> raw = scaled_values(count, fan_in, vkgmm::DType::f32, rng);
  std::vector<uint8_t> blocks = vkgmm::quant::quantize(t, raw.data(), count);
  values = vkgmm::quant::dequantize_experts(t, blocks.data(), experts, rows, cols);
  return upload_bytes(ctx, std::move(blocks));
}

}  // namespace

TrainInstance::TrainInstance(vkgmm::Context& ctx, const ModelLayer& l)
    : layer(l), problem(train_problem(l)), ctx_(ctx), plan_(ctx, problem), sizes_(plan_.sizes()) {
  const vkgmm::MoeLayerProblem& p = problem;
  const int64_t T = p.tokens, d = p.d_model, f = p.d_ff, E = p.num_experts;
  const int64_t n_up = vkgmm::gated(p.activation) ? 2 * f : f;
  const vkgmm::DType f32 = vkgmm::DType::f32, up_t = p.weight_type, down_t = p.down_type();
  std::mt19937 rng(l.up.seed * 7919u + 29u);
  x = scaled_values(size_t(T * d), 1, p.dtype, rng);
  d_y = scaled_values(size_t(T * d), 1, p.dtype, rng);
  router_w = scaled_values(size_t(d * E), d, f32, rng);
  // Block formats are stored as GGUF stores experts: [E, n, k], blocks along k.
  w_up_ = vkgmm::is_quantized(up_t) ? expert_weights(ctx, up_t, E, n_up, d, d, rng, w_up)
                                    : expert_weights(ctx, up_t, E, d, n_up, d, rng, w_up);
  w_down_ = vkgmm::is_quantized(down_t) ? expert_weights(ctx, down_t, E, d, f, f, rng, w_down)
                                        : expert_weights(ctx, down_t, E, f, d, f, rng, w_down);
  x_ = upload(ctx, p.dtype, x);
  d_y_ = upload(ctx, p.dtype, d_y);
  router_w_ = upload(ctx, f32, router_w);
  y_ = zeros(ctx, p.dtype, size_t(T * d));
  status_ = zeros(ctx, vkgmm::DType::f32, 1);
  d_x_ = zeros(ctx, p.dtype, size_t(T * d));
  d_router_w_ = zeros(ctx, f32, size_t(d * E));
  ops_.x = x_.view(0, sizes_.x), ops_.router_w = router_w_.view(0, sizes_.router_w);
  ops_.w_up = w_up_.view(0, sizes_.w_up), ops_.w_down = w_down_.view(0, sizes_.w_down);
  ops_.y = y_.view(0, sizes_.y), ops_.status = status_.view(0, 4);
  grads_.d_y = d_y_.view(0, sizes_.y), grads_.d_x = d_x_.view(0, sizes_.x);
  grads_.d_router_w = d_router_w_.view(0, sizes_.router_w);
  // A block format's weights are frozen: no gradient of them.
  if (!vkgmm::is_quantized(up_t)) {
    d_w_up_ = zeros(ctx, up_t, size_t(E * d * n_up));
    grads_.d_w_up = d_w_up_.view(0, sizes_.w_up);
  }
  if (!vkgmm::is_quantized(down_t)) {
    d_w_down_ = zeros(ctx, down_t, size_t(E * f * d));
    grads_.d_w_down = d_w_down_.view(0, sizes_.w_down);
  }
  if (p.up_bias) {
    b_up = scaled_values(size_t(E * n_up), d, f32, rng);
    b_up_ = upload(ctx, f32, b_up);
    d_b_up_ = zeros(ctx, f32, b_up.size());
    ops_.b_up = b_up_.view(0, sizes_.b_up), grads_.d_b_up = d_b_up_.view(0, sizes_.b_up);
  }
  if (p.down_bias) {
    b_down = scaled_values(size_t(E * d), f, f32, rng);
    b_down_ = upload(ctx, f32, b_down);
    d_b_down_ = zeros(ctx, f32, b_down.size());
    ops_.b_down = b_down_.view(0, sizes_.b_down), grads_.d_b_down = d_b_down_.view(0, sizes_.b_down);
  }
}

void TrainInstance::record_forward(VkCommandBuffer cb) const { plan_.record_forward(cb, ops_); }
void TrainInstance::record_backward(VkCommandBuffer cb) const { plan_.record_backward(cb, ops_, grads_); }

uint32_t TrainInstance::device_status() const {
  uint32_t word = 0;
  status_.download(&word, 4);
  return word;
}

void TrainInstance::poison_outputs() const {
  fill_with_nan(ctx_, {&y_, &d_x_, &d_router_w_, &d_w_up_, &d_b_up_, &d_w_down_, &d_b_down_});
}

TrainInstance::Downloaded TrainInstance::download() const {
  const vkgmm::MoeLayerProblem& p = problem;
  const size_t rows = size_t(p.tokens * p.d_model);
  Downloaded out;
  out.y = bench::download(y_, p.dtype, rows);
  out.d_x = bench::download(d_x_, p.dtype, rows);
  const auto add = [&](const char* name, const vkgmm::Buffer& buf, vkgmm::DType t, VkDeviceSize bytes) {
    if (buf.handle()) out.gradients.emplace_back(name, bench::download(buf, t, size_t(bytes / vkgmm::dtype_size(t))));
  };
  out.gradients.emplace_back("d_x", out.d_x);
  add("d_router_w", d_router_w_, vkgmm::DType::f32, sizes_.router_w);
  add("d_w_up", d_w_up_, p.weight_type, sizes_.w_up);
  add("d_w_down", d_w_down_, p.down_type(), sizes_.w_down);
  add("d_b_up", d_b_up_, vkgmm::DType::f32, sizes_.b_up);
  add("d_b_down", d_b_down_, vkgmm::DType::f32, sizes_.b_down);
  return out;
}

}  // namespace bench
