// CPU oracle for gmm (grouped or routed by expert ids, with its epilogue), tgmm and the gmm backward: plain
// loops, written for obviousness (ordered so they walk memory contiguously, which keeps bench-sized problems
// to seconds).
//
// Sums over k are accumulated in double (so the oracle's own error is negligible next to the device's fp32
// accumulation) and each product rounded once to float, which is the path the device's value takes. What
// follows the product (bias, activation, routing weight, the sum over slots, + existing_out) is done in
// fp32 in the contract's order, as the device does it, and only the stored value is rounded to the out
// type. Arguments are assumed valid (the plans validate); sizes are asserted.
#include "vkgmm/reference.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>

#include "activations.hpp"
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

// Rows multiplied by one expert's weights together: each row of the weights then serves the whole batch
// while it is in cache (the weights of one expert are far larger than the cache at bench sizes).
constexpr size_t kBatch = 8;

// The product rows of one expert's weights: for the lhs rows `rows` (at most kBatch), prod[i][c] =
// sum over kk, in order, of rows[i][kk] * w[kk, c] (w[c, kk] with transpose_rhs), in double, rounded to
// float. The loops walk w contiguously either way.
void products(const GmmProblem& p, const float* w, const std::vector<const float*>& rows,
              std::vector<std::vector<float>>& prod) {
  assert(rows.size() <= kBatch);
  std::vector<double> acc(rows.size() * idx(p.n), 0.0);
  if (p.transpose_rhs) {
    // The batch's sums advance together: independent chains, where one row's dot product alone would
    // wait on each addition.
    double s[kBatch];
    for (int64_t c = 0; c < p.n; ++c) {
      const float* wcol = w + idx(c * p.k);
      std::fill(s, s + kBatch, 0.0);
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const double wv = wcol[kk];
        for (size_t i = 0; i < rows.size(); ++i) s[i] += static_cast<double>(rows[i][kk]) * wv;
      }
      for (size_t i = 0; i < rows.size(); ++i) acc[i * idx(p.n) + idx(c)] = s[i];
    }
  } else {
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const float* wrow = w + idx(kk * p.n);
      for (size_t i = 0; i < rows.size(); ++i) {
        const double av = rows[i][kk];
        double* a = acc.data() + i * idx(p.n);
        for (int64_t c = 0; c < p.n; ++c) a[c] += av * static_cast<double>(wrow[c]);
      }
    }
  }
  prod.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    prod[i].resize(idx(p.n));
    for (int64_t c = 0; c < p.n; ++c) prod[i][idx(c)] = static_cast<float>(acc[i * idx(p.n) + idx(c)]);
  }
}

using act::gated_value;

// The epilogue on one product row, in fp32 and in place: + bias (a row of n, or null), then the
// activation. Afterwards the first out_columns(p) values are the result.
void epilogue(const GmmProblem& p, const float* bias_row, std::vector<float>& v) {
  if (bias_row)
    for (int64_t c = 0; c < p.n; ++c) v[idx(c)] += bias_row[c];
  if (gated(p.epilogue.activation)) {
    // [gate | up]: out[c] reads only columns c and c + half, which later columns never write.
    const int64_t half = p.n / 2;
    for (int64_t c = 0; c < half; ++c) v[idx(c)] = gated_value(p.epilogue.activation, v[idx(c)], v[idx(c + half)]);
  }
}

// Calls each(i, values) for the i-th of `rows` (lhs rows that all meet expert j's weights, j local),
// with its product after the epilogue (out_columns(p) values, fp32): the body shared by gmm and routed gmm.
template <typename Each>
void expert_rows(const GmmProblem& p, const std::vector<float>& rhs, const std::vector<float>& bias, int64_t j,
                 const std::vector<const float*>& rows, Each&& each) {
  const float* w = rhs.data() + idx(j * p.k * p.n);  // [k,n], or [n,k] with transpose_rhs
  const float* bias_row = p.epilogue.bias ? bias.data() + idx(j * p.n) : nullptr;
  std::vector<std::vector<float>> prod;
  std::vector<const float*> batch;
  for (size_t first = 0; first < rows.size(); first += kBatch) {
    batch.assign(rows.begin() + static_cast<std::ptrdiff_t>(first),
                 rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), first + kBatch)));
    products(p, w, batch, prod);
    for (size_t i = 0; i < batch.size(); ++i) {
      epilogue(p, bias_row, prod[i]);
      each(first + i, prod[i].data());
    }
  }
}

int64_t local_groups(const GmmProblem& p, int64_t G) {
  return p.num_rhs_groups < 0 ? G - p.group_offset : p.num_rhs_groups;
}

void assert_operands(const GmmProblem& p, int64_t g_local, const std::vector<float>& rhs,
                     const std::vector<float>& bias) {
  assert(rhs.size() == idx(g_local * p.k * p.n));
  assert(p.epilogue.bias ? bias.size() == idx(g_local * p.n) : bias.empty());
  assert(!gated(p.epilogue.activation) || p.n % 2 == 0);
  (void)p, (void)g_local, (void)rhs, (void)bias;
}

}  // namespace

int64_t out_columns(const GmmProblem& p) { return gated(p.epilogue.activation) ? p.n / 2 : p.n; }

std::vector<float> gmm(const GmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                       const std::vector<float>& existing_out, const std::vector<float>& bias) {
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());
  const int64_t g_local = local_groups(p, G);
  const int64_t n_out = out_columns(p);
  const auto start = group_starts(p.group_sizes);
  assert(p.routing.top_k == 0);
  assert(p.group_offset >= 0 && g_local >= 0 && p.group_offset + g_local <= G);
  assert(start[idx(G)] <= p.m);
  assert(lhs.size() == idx(p.m * p.k));
  assert(existing_out.empty() || existing_out.size() == idx(p.m * n_out));
  assert_operands(p, g_local, rhs, bias);

  // Rows no active group covers keep existing_out (rounded, as the device stores it) or become 0.
  std::vector<float> out(idx(p.m * n_out), 0.0f);
  if (!existing_out.empty())
    for (size_t i = 0; i < out.size(); ++i) out[i] = round_to(p.out_type, existing_out[i]);

  for (int64_t j = 0; j < g_local; ++j) {
    const int64_t g = p.group_offset + j;
    std::vector<const float*> rows;
    for (int64_t r = start[idx(g)]; r < start[idx(g + 1)]; ++r) rows.push_back(lhs.data() + idx(r * p.k));
    // gmm overwrites active rows: existing_out only supplies the rows outside the active groups.
    expert_rows(p, rhs, bias, j, rows, [&](size_t i, const float* v) {
      float* o = out.data() + idx((start[idx(g)] + static_cast<int64_t>(i)) * n_out);
      for (int64_t c = 0; c < n_out; ++c) o[c] = round_to(p.out_type, v[c]);
    });
  }
  return out;
}

std::vector<float> gmm_routed(const GmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                              const std::vector<int32_t>& ids, const std::vector<float>& weights,
                              const std::vector<float>& existing_out, const std::vector<float>& bias) {
  const int64_t T = p.m, top_k = p.routing.top_k, e_local = p.num_rhs_groups, n_out = out_columns(p);
  const int64_t slots = T * top_k;
  const bool combine = p.routing.combine;
  assert(top_k > 0 && p.group_sizes.empty() && e_local >= 0 && p.group_offset >= 0);
  assert(p.routing.num_experts <= 0 || p.routing.num_experts >= p.group_offset + e_local);
  assert(lhs.size() == idx((p.routing.lhs_per_slot ? slots : T) * p.k));
  assert(ids.size() == idx(slots));
  assert(combine ? weights.size() == idx(slots) : weights.empty());
  assert(existing_out.empty() || existing_out.size() == idx((combine ? T : slots) * n_out));
  assert_operands(p, e_local, rhs, bias);

  // The expert of slot s in the window (its rhs index), or -1: ids outside [group_offset, group_offset +
  // E_local), -1 and ids past num_experts (when known) are skipped alike.
  auto local = [&](int64_t s) -> int64_t {
    const int64_t id = ids[idx(s)];
    const bool in = id >= p.group_offset && id < p.group_offset + e_local &&
                    (p.routing.num_experts <= 0 || id < p.routing.num_experts);
    return in ? id - p.group_offset : -1;
  };

  // Each local slot's epi(product), fp32, as the device keeps it in its workspace: expert by expert,
  // slots in token order.
  std::vector<float> value(idx(slots * n_out), 0.0f);
  for (int64_t j = 0; j < e_local; ++j) {
    std::vector<int64_t> mine;
    std::vector<const float*> rows;
    for (int64_t s = 0; s < slots; ++s)
      if (local(s) == j) {
        mine.push_back(s);
        rows.push_back(lhs.data() + idx((p.routing.lhs_per_slot ? s : s / top_k) * p.k));
      }
    expert_rows(p, rhs, bias, j, rows, [&](size_t i, const float* v) {
      std::copy(v, v + n_out, value.begin() + static_cast<std::ptrdiff_t>(mine[i] * n_out));
    });
  }

  if (!combine) {
    // Local slots are overwritten; the others keep existing_out (as stored in the out type) or get 0.
    std::vector<float> out(idx(slots * n_out), 0.0f);
    for (int64_t s = 0; s < slots; ++s)
      for (int64_t c = 0; c < n_out; ++c) {
        const size_t i = idx(s * n_out + c);
        if (local(s) >= 0) out[i] = round_to(p.out_type, value[i]);
        else if (!existing_out.empty()) out[i] = round_to(p.out_type, existing_out[i]);
      }
    return out;
  }

  // Combined: the weighted sum over local slots in ascending j, then + existing_out, all in fp32 (the
  // order is the contract's: it fixes the bits), rounded once.
  std::vector<float> out(idx(T * n_out));
  std::vector<float> acc(idx(n_out));
  for (int64_t t = 0; t < T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t jj = 0; jj < top_k; ++jj) {
      const int64_t s = t * top_k + jj;
      if (local(s) < 0) continue;
      const float w = weights[idx(s)];
      for (int64_t c = 0; c < n_out; ++c) acc[idx(c)] += w * value[idx(s * n_out + c)];
    }
    if (!existing_out.empty())
      for (int64_t c = 0; c < n_out; ++c) acc[idx(c)] += existing_out[idx(t * n_out + c)];
    for (int64_t c = 0; c < n_out; ++c) out[idx(t * n_out + c)] = round_to(p.out_type, acc[idx(c)]);
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
  // d_rhs is rounded to the weights' type; quantized weights have no per-value rounding: f32 then.
  dr.out_type = is_quantized(forward.rhs_type) ? DType::f32 : forward.rhs_type;

  return {gmm(dl, d_out, rhs), tgmm(dr, lhs, d_out)};
}

namespace {
// A logit as top-k ranks it: NaN as -inf.
float rank(float v) { return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v; }

// The softmax's terms over one token's logits: exp(logit - top), the top logit's own exactly 1 (also when
// it is +-inf), and their sum.
struct SoftmaxRow {
  double top = -std::numeric_limits<double>::infinity(), total = 0;
  SoftmaxRow(const float* row, int64_t experts) {
    for (int64_t e = 0; e < experts; ++e) top = std::max(top, double(rank(row[e])));
    for (int64_t e = 0; e < experts; ++e) total += term(row[e]);
  }
  double term(float v) const { return double(rank(v)) == top ? 1.0 : std::exp(double(rank(v)) - top); }
};
}  // namespace

TopK top_k(const TopKProblem& p, const std::vector<float>& logits) {
  TopK r;
  r.ids.resize(size_t(p.tokens * p.top_k));
  r.weights.resize(r.ids.size());
  std::vector<int32_t> order(size_t(p.experts));
  for (int64_t t = 0; t < p.tokens; ++t) {
    const float* row = &logits[size_t(t * p.experts)];
    for (int64_t e = 0; e < p.experts; ++e) order[size_t(e)] = int32_t(e);
    // Highest logit first, the lower expert first among equal ones.
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return rank(row[a]) > rank(row[b]); });
    const SoftmaxRow softmax(row, p.experts);
    double chosen = 0;
    for (int64_t j = 0; j < p.top_k; ++j) chosen += softmax.term(row[order[size_t(j)]]);
    for (int64_t j = 0; j < p.top_k; ++j) {
      const int32_t e = order[size_t(j)];
      r.ids[size_t(t * p.top_k + j)] = e;
      r.weights[size_t(t * p.top_k + j)] = float(softmax.term(row[e]) / (p.renormalize ? chosen : softmax.total));
    }
  }
  return r;
}

std::vector<double> top_k_backward(const TopKProblem& p, const std::vector<float>& logits,
                                   const std::vector<int32_t>& ids, const std::vector<float>& weights,
                                   const std::vector<float>& d_weights) {
  const size_t E = size_t(p.experts), k = size_t(p.top_k);
  assert(logits.size() == size_t(p.tokens) * E && ids.size() == size_t(p.tokens) * k &&
         weights.size() == ids.size() && d_weights.size() == ids.size());
  std::vector<double> d_logits(logits.size(), 0.0);
  for (size_t t = 0; t < size_t(p.tokens); ++t) {
    const int32_t* id = &ids[t * k];
    const float *w = &weights[t * k], *dw = &d_weights[t * k];
    auto valid = [&](size_t j) { return id[j] >= 0 && id[j] < p.experts; };
    double s = 0;
    for (size_t j = 0; j < k; ++j)
      if (valid(j)) s += double(dw[j]) * double(w[j]);
    double* d = &d_logits[t * E];
    if (p.renormalize) {
      // d/dl_e of sum_j dw_j * exp(l_ids[j]) / sum_i exp(l_ids[i]), the sums over the valid slots.
      for (size_t j = 0; j < k; ++j)
        if (valid(j)) d[size_t(id[j])] += double(w[j]) * (double(dw[j]) - s);
      continue;
    }
    // d/dl_e of sum_j dw_j * p[ids[j]]: p_e * (g_e - s), g_e the d_weights of the slots naming e.
    const float* row = &logits[t * E];
    const SoftmaxRow softmax(row, p.experts);
    std::vector<double> g(E, 0.0);
    for (size_t j = 0; j < k; ++j)
      if (valid(j)) g[size_t(id[j])] += double(dw[j]);
    for (size_t e = 0; e < E; ++e) d[e] = softmax.term(row[e]) / softmax.total * (g[e] - s);
  }
  return d_logits;
}

}  // namespace vkgmm::reference
