#include "baselines.hpp"

#include <algorithm>
#include <optional>

#ifdef VKGMM_HAVE_OPENBLAS
#include <cblas.h>
// OpenBLAS extensions; declared here too so that any cblas.h will do.
extern "C" int openblas_get_num_threads(void);
extern "C" char* openblas_get_config(void);
#endif

namespace bench {

// ----- naive: one dispatch per group --------------------------------------------------------------------

struct NaiveLoop::State {
  vkgmm::Buffer lhs_mk;  // tgmm only: lhs stored [m, k]
  vkgmm::Buffer out0, out1;
  std::vector<vkgmm::GmmPlan> gmm;
  std::vector<vkgmm::GmmOperands> gmm_ops;
  std::vector<vkgmm::TgmmPlan> tgmm;
  std::vector<vkgmm::TgmmOperands> tgmm_ops;
  std::vector<vkgmm::GmmBackwardPlan> backward;
  std::vector<vkgmm::GmmBackwardOperands> backward_ops;
  Workload work;
};

std::string NaiveLoop::unsupported_reason(const Workload& w) {
  if (w.dtype != vkgmm::DType::f32 && (w.k % 2 || w.n % 2))
    return "16-bit per-group views need even k and n";
  return "";
}

std::string NaiveLoop::unsupported_reason(const Workload& w, const vkgmm::DeviceInfo& info) {
  if (std::string why = unsupported_reason(w); !why.empty()) return why;
  // A block-format rhs view must start at a binding offset: each expert's bytes a multiple of the
  // device's storage-buffer offset alignment.
  const uint64_t align = std::max<uint64_t>(1, info.min_storage_buffer_offset_alignment);
  if (w.quantized() && vkgmm::storage_bytes(*w.rhs_format, uint64_t(w.k * w.n)) % align)
    return "one expert's " + std::string(vkgmm::dtype_name(*w.rhs_format)) +
           " blocks are not a multiple of minStorageBufferOffsetAlignment " + std::to_string(align) +
           ": per-expert views of the weights cannot start at a binding offset";
  return "";
}

NaiveLoop::NaiveLoop(Instance& inst, const vkgmm::TilingChoice& tiling) : st_(std::make_unique<State>()) {
  const Workload& w = inst.work;
  State& s = *st_;
  s.work = w;
  const size_t m = size_t(w.m), k = size_t(w.k), n = size_t(w.n), g = size_t(w.groups);
  const VkDeviceSize e = vkgmm::dtype_size(w.dtype);
  vkgmm::Context& ctx = inst.ctx;
  switch (w.op) {
    case Op::gmm: s.out0 = zeros(ctx, w.dtype, m * n); break;
    case Op::tgmm: {
      s.out0 = zeros(ctx, w.dtype, g * k * n);
      std::vector<float> mk(m * k);
      for (size_t r = 0; r < m; ++r)
        for (size_t kk = 0; kk < k; ++kk) mk[r * k + kk] = inst.a[kk * m + r];
      s.lhs_mk = upload(ctx, w.dtype, mk);
      break;
    }
    case Op::backward:
      s.out0 = zeros(ctx, w.dtype, m * k);
      s.out1 = zeros(ctx, w.dtype, g * k * n);
      break;
  }
  VkDeviceSize start = 0;  // first row of the group
  for (size_t grp = 0; grp < g; start += VkDeviceSize(w.group_sizes[grp]), ++grp) {
    const int64_t rows = w.group_sizes[grp];
    if (rows == 0) continue;  // its outputs stay zero, as the grouped op writes them
    const VkDeviceSize gkn = grp * k * n * e;
    switch (w.op) {
      case Op::gmm: {
        vkgmm::GmmProblem p;
        p.m = rows, p.k = w.k, p.n = w.n;
        p.group_sizes = {static_cast<int32_t>(rows)};
        p.lhs_type = p.out_type = w.dtype;
        p.rhs_type = w.rhs_type();
        p.transpose_rhs = w.transpose_rhs();
        p.tiling = tiling;
        // Block-format weights: each group's blocks start at a whole multiple of one expert's bytes.
        const VkDeviceSize rhs_at = grp * vkgmm::storage_bytes(w.rhs_type(), k * n);
        s.gmm.emplace_back(ctx, p);
        const vkgmm::OperandSizes z = s.gmm.back().sizes();
        s.gmm_ops.push_back({inst.buf_a.view(start * k * e, z.lhs), inst.buf_b.view(rhs_at, z.rhs),
                             s.out0.view(start * n * e, z.out), {}});
        break;
      }
      case Op::tgmm: {
        vkgmm::TgmmProblem p;
        p.m = rows, p.k = w.k, p.n = w.n;
        p.group_sizes = {static_cast<int32_t>(rows)};
        p.lhs_mk = true;
        p.lhs_type = p.rhs_type = p.out_type = w.dtype;
        p.tiling = tiling;
        s.tgmm.emplace_back(ctx, p);
        const vkgmm::OperandSizes z = s.tgmm.back().sizes();
        s.tgmm_ops.push_back({s.lhs_mk.view(start * k * e, z.lhs), inst.buf_b.view(start * n * e, z.rhs),
                              s.out0.view(gkn, z.out), {}});
        break;
      }
      case Op::backward: {
        vkgmm::GmmProblem p;
        p.m = rows, p.k = w.k, p.n = w.n;
        p.group_sizes = {static_cast<int32_t>(rows)};
        p.lhs_type = p.rhs_type = p.out_type = w.dtype;
        p.tiling = tiling;
        s.backward.emplace_back(ctx, p);
        // d_lhs = gmm(d_out, rhs) and d_rhs = tgmm(lhs, d_out): their plans know the view sizes.
        const vkgmm::OperandSizes dl = s.backward.back().d_lhs_plan().sizes();
        const vkgmm::OperandSizes dr = s.backward.back().d_rhs_plan().sizes();
        s.backward_ops.push_back({inst.buf_a.view(start * k * e, dr.lhs), inst.buf_b.view(gkn, dl.rhs),
                                  inst.buf_c.view(start * n * e, dl.lhs), s.out0.view(start * k * e, dl.out),
                                  s.out1.view(gkn, dr.out)});
        break;
      }
    }
  }
}

NaiveLoop::~NaiveLoop() = default;

void NaiveLoop::record(VkCommandBuffer cb) const {
  // No barriers: every dispatch writes its own rows or its own group's slice.
  for (size_t i = 0; i < st_->gmm.size(); ++i) st_->gmm[i].record(cb, st_->gmm_ops[i]);
  for (size_t i = 0; i < st_->tgmm.size(); ++i) st_->tgmm[i].record(cb, st_->tgmm_ops[i]);
  for (size_t i = 0; i < st_->backward.size(); ++i) st_->backward[i].record(cb, st_->backward_ops[i]);
}

std::vector<Output> NaiveLoop::download() const {
  const Workload& w = st_->work;
  const size_t m = size_t(w.m), k = size_t(w.k), n = size_t(w.n), g = size_t(w.groups);
  switch (w.op) {
    case Op::gmm: return {{"out", bench::download(st_->out0, w.dtype, m * n), 0}};
    case Op::tgmm: return {{"out", bench::download(st_->out0, w.dtype, g * k * n), 0}};
    case Op::backward:
      return {{"d_lhs", bench::download(st_->out0, w.dtype, m * k), 0},
              {"d_rhs", bench::download(st_->out1, w.dtype, g * k * n), 0}};
  }
  return {};
}

// ----- OpenBLAS: cblas_sgemm per group ------------------------------------------------------------------

std::string openblas_description() {
#ifdef VKGMM_HAVE_OPENBLAS
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ') config.pop_back();
  return config + ", " + std::to_string(openblas_get_num_threads()) + " threads";
#else
  return "";
#endif
}

BlasLoop::BlasLoop(const Instance& inst) : inst_(inst) {
  const Workload& w = inst.work;
  const size_t m = size_t(w.m), k = size_t(w.k), n = size_t(w.n), g = size_t(w.groups);
  switch (w.op) {
    case Op::gmm: out_ = {{"out", std::vector<float>(m * n), 0}}; break;
    case Op::tgmm: out_ = {{"out", std::vector<float>(g * k * n), 0}}; break;
    case Op::backward: out_ = {{"d_lhs", std::vector<float>(m * k), 0}, {"d_rhs", std::vector<float>(g * k * n), 0}}; break;
  }
}

void BlasLoop::run() {
#ifdef VKGMM_HAVE_OPENBLAS
  const Workload& w = inst_.work;
  const int k = int(w.k), n = int(w.n), m = int(w.m);
  const float* a = inst_.a.data();
  const float* b = inst_.b.data();
  const float* c = inst_.c.data();
  int start = 0;
  for (size_t grp = 0; grp < w.group_sizes.size(); start += w.group_sizes[grp], ++grp) {
    const int rows = w.group_sizes[grp];
    const size_t gkn = grp * size_t(k) * n;
    if (rows == 0) {
      // An empty group's tgmm output is zero; BLAS with a zero-length sum need not write it.
      if (w.op != Op::gmm) std::fill_n(out_.back().values.begin() + gkn, size_t(k) * n, 0.0f);
      continue;
    }
    switch (w.op) {
      case Op::gmm:  // out[rows] = lhs[rows] @ rhs[g] (rhs[g]^T for block-format weights, [n, k])
        cblas_sgemm(CblasRowMajor, CblasNoTrans, w.transpose_rhs() ? CblasTrans : CblasNoTrans, rows, n, k, 1.0f,
                    a + size_t(start) * k, k, b + gkn, w.transpose_rhs() ? k : n, 0.0f,
                    out_[0].values.data() + size_t(start) * n, n);
        break;
      case Op::tgmm:  // out[g] = lhs[:, rows] @ rhs[rows], lhs [k, m] read in place (leading dimension m)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, n, rows, 1.0f, a + start, m,
                    b + size_t(start) * n, n, 0.0f, out_[0].values.data() + gkn, n);
        break;
      case Op::backward:  // d_lhs[rows] = d_out[rows] @ rhs[g]^T; d_rhs[g] = lhs[rows]^T @ d_out[rows]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, n, 1.0f, c + size_t(start) * n, n,
                    b + gkn, n, 0.0f, out_[0].values.data() + size_t(start) * k, k);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, rows, 1.0f, a + size_t(start) * k, k,
                    c + size_t(start) * n, n, 0.0f, out_[1].values.data() + gkn, n);
        break;
    }
  }
#endif
}

}  // namespace bench
