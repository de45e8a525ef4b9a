// Checking a result against the CPU reference.
//
// vkgmm::reference is written for obviousness: for moe-prefill its gmm walks rhs down columns (a 4 KiB
// stride) and its tgmm walks both operands down columns, which costs 15-20 s per call on this machine.
// Both ops are independent across output columns, so the reference is run here on narrow column blocks
// (where every stride stays in cache), on every core, and the blocks are put back together. Each output
// element is still the reference's own double sum, in the reference's order: this is a change of work
// layout, not a second reference.
#include "check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "tolerance.hpp"
#include "vkgmm/reference.hpp"

namespace bench {

void parallel_blocks(int64_t blocks, const std::function<void(int64_t)>& body) {
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(blocks)));
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t b; (b = next.fetch_add(1)) < blocks;) body(b);
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < workers; ++i) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

std::vector<float> gather_rows(const std::vector<float>& m, const std::vector<int64_t>& rows, int64_t width) {
  std::vector<float> out;
  out.reserve(rows.size() * size_t(width));
  for (const int64_t r : rows) out.insert(out.end(), m.begin() + r * width, m.begin() + (r + 1) * width);
  return out;
}

std::vector<float> gather_experts(const std::vector<float>& all, const std::vector<int32_t>& experts, int64_t per_expert) {
  std::vector<int64_t> rows(experts.begin(), experts.end());
  return all.empty() ? all : gather_rows(all, rows, per_expert);
}

std::vector<int64_t> spread(int64_t n, int64_t count) {
  const int64_t c = std::min(n, count);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c; ++i) out.push_back(i * n / c);
  return out;
}

namespace {

constexpr int64_t kBlock = 16;  // columns per reference call: 64-byte strides


// out [m, n] of a gmm (no existing_out), by column blocks.
std::vector<float> gmm_by_blocks(const vkgmm::GmmProblem& p, const std::vector<float>& lhs,
                                 const std::vector<float>& rhs) {
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());
  const int64_t g_local = p.num_rhs_groups < 0 ? G - p.group_offset : p.num_rhs_groups;
  std::vector<float> out(size_t(p.m * p.n), 0.0f);
  parallel_blocks((p.n + kBlock - 1) / kBlock, [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, w = std::min(kBlock, p.n - c0);
    vkgmm::GmmProblem q = p;
    q.n = w;
    // rhs[g] restricted to columns [c0, c0 + w): [k, w], or rows [c0, c0 + w) of [n, k] when transposed.
    std::vector<float> sub(size_t(g_local * p.k * w));
    for (int64_t g = 0; g < g_local; ++g)
      for (int64_t kk = 0; kk < p.k; ++kk)
        for (int64_t c = 0; c < w; ++c) {
          const size_t src = p.transpose_rhs ? size_t((g * p.n + c0 + c) * p.k + kk) : size_t((g * p.k + kk) * p.n + c0 + c);
          const size_t dst = p.transpose_rhs ? size_t((g * w + c) * p.k + kk) : size_t((g * p.k + kk) * w + c);
          sub[dst] = rhs[src];
        }
    const std::vector<float> part = vkgmm::reference::gmm(q, lhs, sub);
    for (int64_t r = 0; r < p.m; ++r)
      std::copy_n(part.begin() + r * w, w, out.begin() + r * p.n + c0);
  });
  return out;
}

// out [groups, k, n] (or [groups, n, k] with out_nk) of a tgmm (no existing_out), by column blocks.
std::vector<float> tgmm_by_blocks(const vkgmm::TgmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs) {
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());
  const int64_t groups = p.num_actual_groups < 0 ? G - p.group_offset : p.num_actual_groups;
  // The reference reads lhs [k, m] along m, contiguously: transpose an [m, k] lhs once.
  std::vector<float> lhs_km;
  if (p.lhs_mk) {
    lhs_km.resize(lhs.size());
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t kk = 0; kk < p.k; ++kk) lhs_km[size_t(kk * p.m + r)] = lhs[size_t(r * p.k + kk)];
  }
  const std::vector<float>& a = p.lhs_mk ? lhs_km : lhs;
  std::vector<float> out(size_t(groups * p.k * p.n), 0.0f);
  parallel_blocks((p.n + kBlock - 1) / kBlock, [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, w = std::min(kBlock, p.n - c0);
    vkgmm::TgmmProblem q = p;
    q.n = w;
    q.lhs_mk = false;
    q.out_nk = false;
    std::vector<float> sub(size_t(p.m * w));
    for (int64_t r = 0; r < p.m; ++r) std::copy_n(rhs.begin() + r * p.n + c0, w, sub.begin() + r * w);
    const std::vector<float> part = vkgmm::reference::tgmm(q, a, sub);  // [groups, k, w]
    for (int64_t j = 0; j < groups; ++j)
      for (int64_t kk = 0; kk < p.k; ++kk)
        for (int64_t c = 0; c < w; ++c) {
          const size_t dst = p.out_nk ? size_t((j * p.n + c0 + c) * p.k + kk) : size_t((j * p.k + kk) * p.n + c0 + c);
          out[dst] = part[size_t((j * p.k + kk) * w + c)];
        }
  });
  return out;
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", x);
  return buf;
}

}  // namespace

std::vector<Output> expected_outputs(const Instance& inst) {
  std::vector<Output> want = inst.download();  // names and reduction lengths; values are replaced
  switch (inst.work.op) {
    case Op::gmm:
      want[0].values = gmm_by_blocks(inst.gmm_problem(), inst.a, inst.b);
      break;
    case Op::tgmm:
      want[0].values = tgmm_by_blocks(inst.tgmm_problem(), inst.a, inst.b);
      break;
    case Op::backward: {
      // The contract's backward: d_lhs = gmm(d_out, rhs, transpose_rhs flipped), d_rhs = tgmm(lhs^T, d_out).
      const vkgmm::GmmProblem f = inst.gmm_problem();
      vkgmm::GmmProblem dl = f;
      dl.k = f.n;
      dl.n = f.k;
      dl.transpose_rhs = !f.transpose_rhs;
      vkgmm::TgmmProblem dr = inst.tgmm_problem();
      dr.lhs_mk = true;
      want[0].values = gmm_by_blocks(dl, inst.c, inst.b);
      want[1].values = tgmm_by_blocks(dr, inst.a, inst.c);
      break;
    }
  }
  return want;
}

std::optional<std::string> compare(const std::vector<Output>& got, const std::vector<Output>& want,
                                   vkgmm::DType dtype) {
  const bool f32 = dtype == vkgmm::DType::f32;
  for (size_t o = 0; o < want.size(); ++o) {
    const Output& g = got.at(o);
    const Output& w = want[o];
    if (g.values.size() != w.values.size())
      return w.name + ": " + std::to_string(g.values.size()) + " elements, expected " + std::to_string(w.values.size());
    // The absolute tolerance widens with the length of the sums behind the output (tools/tolerance.hpp).
    const tool::Tolerance tol = tool::tolerance_for(!f32, w.reduction);
    const tool::Comparison c = tool::compare(g.values, w.values, tol);
    if (c.bad) {
      const size_t first = c.first_bad;
      return w.name + "[" + std::to_string(first) + "]: got " + number(g.values[first]) + ", expected " +
             number(w.values[first]) + " (tolerance " + number(tol.atol) + " + " + number(tol.rtol) +
             " * |expected|; " + std::to_string(c.bad) + " of " + std::to_string(w.values.size()) +
             " elements differ)";
    }
  }
  return std::nullopt;
}

bool perturb_if_asked(std::vector<Output>& got, const char* value) {
  const char* env = std::getenv("VKGMM_BENCH_PERTURB");
  if (!env || std::string(env) != value || got.empty() || got[0].values.empty()) return false;
  std::vector<float>& v = got[0].values;
  v[v.size() / 2] += 1.0f;
  return true;
}

}  // namespace bench
