// CPU oracle for gmm, tgmm and the gmm backward: plain loops, written for obviousness (ordered so they
// walk memory contiguously, which keeps bench-sized problems to seconds).
//
// Sums are accumulated in double (so the oracle's own error is negligible next to the device's fp32
// accumulation) and each result is rounded once, to float and then to the problem's out type, which is
// the path the device's value takes. Arguments are assumed valid (the plans validate); sizes are asserted.
#include "vkgmm/reference.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>

#include "vkgmm/convert.hpp"

namespace vkgmm::reference {
namespace {

// start[g] for g in [0, G]: the first row of each group, start[G] = sum(group_sizes).
std::vector<int64_t> group_starts(const std::vector<int32_t>& sizes) {
  std::vector<int64_t> start(sizes.size() + 1, 0);
  for (size_t g = 0; g < sizes.size(); ++g) start[g + 1] = start[g] + sizes[g];
  return start;
}

size_t idx(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

std::vector<float> gmm(const GmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                       const std::vector<float>& existing_out, const std::vector<float>& bias) {
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());
  const int64_t g_local = p.num_rhs_groups < 0 ? G - p.group_offset : p.num_rhs_groups;
  const auto start = group_starts(p.group_sizes);
  assert(p.group_offset >= 0 && g_local >= 0 && p.group_offset + g_local <= G);
  assert(start[idx(G)] <= p.m);
  assert(lhs.size() == idx(p.m * p.k));
  assert(rhs.size() == idx(g_local * p.k * p.n));
  assert(existing_out.empty() || existing_out.size() == idx(p.m * p.n));

  // Rows no active group covers keep existing_out (rounded, as the device stores it) or become 0.
  std::vector<float> out(idx(p.m * p.n), 0.0f);
  if (!existing_out.empty())
    for (size_t i = 0; i < out.size(); ++i) out[i] = round_to(p.out_type, existing_out[i]);

  for (int64_t j = 0; j < g_local; ++j) {
    const int64_t g = p.group_offset + j;
    const float* w = rhs.data() + idx(j * p.k * p.n);  // [k,n], or [n,k] with transpose_rhs
    std::vector<double> acc(idx(p.n));
    for (int64_t r = start[idx(g)]; r < start[idx(g + 1)]; ++r) {
      const float* a = lhs.data() + idx(r * p.k);
      // Each output sums over kk in order; the loops walk memory contiguously (rows of w, or with
      // transpose_rhs its rows of K), which keeps the oracle usable on bench-sized problems.
      std::fill(acc.begin(), acc.end(), 0.0);
      if (p.transpose_rhs) {
        for (int64_t c = 0; c < p.n; ++c)
          for (int64_t kk = 0; kk < p.k; ++kk)
            acc[idx(c)] += static_cast<double>(a[kk]) * static_cast<double>(w[idx(c * p.k + kk)]);
      } else {
        for (int64_t kk = 0; kk < p.k; ++kk) {
          const double av = a[kk];
          const float* wrow = w + idx(kk * p.n);
          for (int64_t c = 0; c < p.n; ++c) acc[idx(c)] += av * static_cast<double>(wrow[c]);
        }
      }
      // gmm overwrites active rows: existing_out only supplies the rows outside the active groups.
      for (int64_t c = 0; c < p.n; ++c) out[idx(r * p.n + c)] = round_to(p.out_type, static_cast<float>(acc[idx(c)]));
    }
  }
  return out;
}

std::vector<float> tgmm(const TgmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                        const std::vector<float>& existing_out) {
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());
  const int64_t groups = p.num_actual_groups < 0 ? G - p.group_offset : p.num_actual_groups;
  const auto start = group_starts(p.group_sizes);
  assert(p.group_offset >= 0 && groups >= 0 && p.group_offset + groups <= G);
  assert(start[idx(G)] <= p.m);
  assert(lhs.size() == idx(p.k * p.m));
  assert(rhs.size() == idx(p.m * p.n));
  const size_t per_group = idx(p.k * p.n);
  assert(existing_out.empty() || existing_out.size() == idx(groups) * per_group);

  std::vector<float> out(idx(groups) * per_group);
  for (int64_t j = 0; j < groups; ++j) {
    const int64_t g = p.group_offset + j;
    std::vector<double> acc(idx(p.n));
    for (int64_t kk = 0; kk < p.k; ++kk) {
      // existing_out shares out's layout, so one position serves both.
      auto pos = [&](int64_t c) { return idx(j) * per_group + (p.out_nk ? idx(c * p.k + kk) : idx(kk * p.n + c)); };
      // tgmm adds existing_out (megablox does); an empty group leaves just that, or 0.
      for (int64_t c = 0; c < p.n; ++c) acc[idx(c)] = existing_out.empty() ? 0.0 : double(existing_out[pos(c)]);
      // Each output sums over the group's rows in order, walking rows of rhs contiguously.
      for (int64_t r = start[idx(g)]; r < start[idx(g + 1)]; ++r) {
        const double a = p.lhs_mk ? lhs[idx(r * p.k + kk)] : lhs[idx(kk * p.m + r)];
        const float* brow = rhs.data() + idx(r * p.n);
        for (int64_t c = 0; c < p.n; ++c) acc[idx(c)] += a * static_cast<double>(brow[c]);
      }
      for (int64_t c = 0; c < p.n; ++c) out[pos(c)] = round_to(p.out_type, static_cast<float>(acc[idx(c)]));
    }
  }
  return out;
}

Gradients gmm_backward(const GmmProblem& forward, const std::vector<float>& lhs,
                       const std::vector<float>& rhs, const std::vector<float>& d_out) {
  const int64_t G = static_cast<int64_t>(forward.group_sizes.size());
  const int64_t g_local = forward.num_rhs_groups < 0 ? G - forward.group_offset : forward.num_rhs_groups;
  assert(d_out.size() == idx(forward.m * forward.n));

  // d_lhs [m,k] = d_out [m,n] @ rhs[g]^T: the same rhs buffer read with the opposite transpose.
  // No existing_out, so rows outside the active groups get 0.
  GmmProblem dl;
  dl.m = forward.m;
  dl.k = forward.n;
  dl.n = forward.k;
  dl.group_sizes = forward.group_sizes;
  dl.num_rhs_groups = g_local;
  dl.group_offset = forward.group_offset;
  dl.transpose_rhs = !forward.transpose_rhs;
  dl.lhs_type = forward.out_type;
  dl.rhs_type = forward.rhs_type;
  dl.out_type = forward.lhs_type;

  // d_rhs[j] [k,n] = lhs[rows]^T @ d_out[rows], reading lhs as stored ([m,k]); [n,k] when the forward
  // rhs was transposed, so d_rhs always has rhs's layout.
  TgmmProblem dr;
  dr.m = forward.m;
  dr.k = forward.k;
  dr.n = forward.n;
  dr.group_sizes = forward.group_sizes;
  dr.group_offset = forward.group_offset;
  dr.num_actual_groups = g_local;
  dr.lhs_mk = true;
  dr.out_nk = forward.transpose_rhs;
  dr.lhs_type = forward.lhs_type;
  dr.rhs_type = forward.out_type;
  dr.out_type = forward.rhs_type;

  return {gmm(dl, d_out, rhs), tgmm(dr, lhs, d_out)};
}

}  // namespace vkgmm::reference
