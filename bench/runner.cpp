// Instance: inputs, buffers, plans and one recorded call of a workload.
#include "runner.hpp"

#include <algorithm>
#include <random>

#include "tuning.hpp"
#include "vkgmm/convert.hpp"

namespace bench {

namespace {

std::vector<float> random_values(size_t count, vkgmm::DType t, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = vkgmm::round_to(t, u(rng));
  return v;
}

int64_t largest_group(const Workload& w) {
  return w.group_sizes.empty() ? 0 : *std::max_element(w.group_sizes.begin(), w.group_sizes.end());
}

}  // namespace

size_t buffer_bytes(vkgmm::DType t, size_t count) {
  return std::max<size_t>(4, count * vkgmm::dtype_size(t));
}

vkgmm::Buffer upload(vkgmm::Context& ctx, vkgmm::DType t, const std::vector<float>& values) {
  std::vector<uint8_t> bytes = vkgmm::encode(t, values);
  bytes.resize(buffer_bytes(t, values.size()), 0);
  vkgmm::Buffer buf = ctx.create_buffer(bytes.size());
  buf.upload(bytes.data(), bytes.size());
  return buf;
}

vkgmm::Buffer zeros(vkgmm::Context& ctx, vkgmm::DType t, size_t count) {
  const std::vector<uint8_t> bytes(buffer_bytes(t, count), 0);
  vkgmm::Buffer buf = ctx.create_buffer(bytes.size());
  buf.upload(bytes.data(), bytes.size());
  return buf;
}

std::vector<float> download(const vkgmm::Buffer& buf, vkgmm::DType t, size_t count) {
  std::vector<uint8_t> bytes(buffer_bytes(t, count));
  buf.download(bytes.data(), bytes.size());
  return vkgmm::decode(t, bytes.data(), count);
}

Instance::Instance(vkgmm::Context& context, const Workload& w, const vkgmm::TilingChoice& tiling)
    : ctx(context), work(w) {
  plan(tiling);
  std::mt19937 rng(w.seed * 7919u + 17u);
  const size_t m = size_t(w.m), k = size_t(w.k), n = size_t(w.n), g = size_t(w.groups);
  const vkgmm::DType t = w.dtype;
  switch (w.op) {
    case Op::gmm:
      a = random_values(m * k, t, rng);
      b = random_values(g * k * n, t, rng);
      out0 = zeros(ctx, t, m * n);
      break;
    case Op::tgmm:
      a = random_values(k * m, t, rng);
      b = random_values(m * n, t, rng);
      out0 = zeros(ctx, t, g * k * n);
      break;
    case Op::backward:
      a = random_values(m * k, t, rng);
      b = random_values(g * k * n, t, rng);
      c = random_values(m * n, t, rng);
      out0 = zeros(ctx, t, m * k);
      out1 = zeros(ctx, t, g * k * n);
      buf_c = upload(ctx, t, c);
      break;
  }
  buf_a = upload(ctx, t, a);
  buf_b = upload(ctx, t, b);
}

vkgmm::GmmProblem Instance::gmm_problem() const {
  vkgmm::GmmProblem p;
  p.m = work.m, p.k = work.k, p.n = work.n;
  p.group_sizes = work.group_sizes;
  p.lhs_type = p.rhs_type = p.out_type = work.dtype;
  return p;
}

vkgmm::TgmmProblem Instance::tgmm_problem() const {
  vkgmm::TgmmProblem p;
  p.m = work.m, p.k = work.k, p.n = work.n;
  p.group_sizes = work.group_sizes;
  p.lhs_type = p.rhs_type = p.out_type = work.dtype;
  return p;
}

void Instance::plan(const vkgmm::TilingChoice& tiling) {
  // Drop the old plans first so that a call's cost never includes keeping two sets alive.
  gmm_.reset();
  tgmm_.reset();
  backward_.reset();
  switch (work.op) {
    case Op::gmm: {
      vkgmm::GmmProblem p = gmm_problem();
      p.tiling = tiling;
      gmm_.emplace(ctx, p);
      break;
    }
    case Op::tgmm: {
      vkgmm::TgmmProblem p = tgmm_problem();
      p.tiling = tiling;
      tgmm_.emplace(ctx, p);
      break;
    }
    case Op::backward: {
      vkgmm::GmmProblem p = gmm_problem();
      p.tiling = tiling;
      backward_.emplace(ctx, p);
      break;
    }
  }
}

std::string Instance::tiling_text() const {
  if (gmm_) return bench::tiling_text(gmm_->tiling());
  if (tgmm_) return bench::tiling_text(tgmm_->tiling());
  if (backward_) {
    const std::string l = bench::tiling_text(backward_->d_lhs_plan().tiling());
    const std::string r = bench::tiling_text(backward_->d_rhs_plan().tiling());
    return l == r ? l : l + "/" + r;
  }
  return "";
}

void Instance::record(VkCommandBuffer cb) const {
  if (gmm_) gmm_->record(cb, {buf_a.view(), buf_b.view(), out0.view(), {}});
  if (tgmm_) tgmm_->record(cb, {buf_a.view(), buf_b.view(), out0.view(), {}});
  if (backward_) backward_->record(cb, {buf_a.view(), buf_b.view(), buf_c.view(), out0.view(), out1.view()});
}

std::vector<Output> Instance::download() const {
  const size_t m = size_t(work.m), k = size_t(work.k), n = size_t(work.n), g = size_t(work.groups);
  const vkgmm::DType t = work.dtype;
  switch (work.op) {
    case Op::gmm: return {{"out", bench::download(out0, t, m * n), work.k}};
    case Op::tgmm: return {{"out", bench::download(out0, t, g * k * n), largest_group(work)}};
    case Op::backward:
      return {{"d_lhs", bench::download(out0, t, m * k), work.n},
              {"d_rhs", bench::download(out1, t, g * k * n), largest_group(work)}};
  }
  return {};
}

}  // namespace bench
