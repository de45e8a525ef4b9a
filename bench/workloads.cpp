// Presets and routing distributions. Every random choice comes from a seeded std::mt19937 so that a
// workload is the same on every run and every machine (its sizes are printed in --json).
#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace bench {

const char* op_name(Op op) {
  switch (op) {
    case Op::gmm: return "gmm";
    case Op::tgmm: return "tgmm";
    case Op::backward: return "backward";
  }
  return "?";
}

bool parse_op(const std::string& s, Op& op) {
  for (Op o : {Op::gmm, Op::tgmm, Op::backward})
    if (s == op_name(o)) return op = o, true;
  return false;
}

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::uniform: return "uniform";
    case Dist::random: return "random";
    case Dist::zipf: return "zipf";
  }
  return "?";
}

bool parse_dist(const std::string& s, Dist& d) {
  for (Dist x : {Dist::uniform, Dist::random, Dist::zipf})
    if (s == dist_name(x)) return d = x, true;
  return false;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"moe-prefill", "moe-fine", "decode", "moe-grad"};
  return names;
}

const std::vector<std::string>& ids_preset_names() {
  static const std::vector<std::string> names = {"ids-decode", "qwen3-ids-t1", "qwen3-ids-t8", "qwen3-ids-t64",
                                                 "qwen3-ids-t512", "moe-grad-ids"};
  return names;
}

const std::vector<std::string>& quant_preset_names() {
  // ids-decode beside every block format's (the type list's order), then prefill: bf16 beside q8_0, q4_K.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"ids-decode"};
    for (vkgmm::DType t : vkgmm::block_formats()) v.push_back(std::string(vkgmm::dtype_name(t)) + "-ids-decode");
    for (const char* p : {"bf16-prefill", "q8_0-prefill", "q4_K-prefill"}) v.push_back(p);
    return v;
  }();
  return names;
}

bool make_preset(const std::string& name, Workload& w) {
  w = Workload{};
  w.name = name;
  // Quantized presets: "<format>-ids-decode" (ids-decode, f32 activations) and "<format>-prefill"
  // (moe-prefill's shape, bf16 activations and out, as its peer bf16-prefill: only the weights differ).
  for (const char* suffix : {"-ids-decode", "-prefill"}) {
    const std::string sfx = suffix;
    if (name.size() <= sfx.size() || name.compare(name.size() - sfx.size(), sfx.size(), sfx) != 0) continue;
    const std::string format = name.substr(0, name.size() - sfx.size());
    const std::optional<vkgmm::DType> t = vkgmm::parse_dtype(format);
    if (!t || vkgmm::dtype_name(*t) != format) continue;  // GGUF's spelling only
    if (!make_preset(sfx == "-prefill" ? "moe-prefill" : "ids-decode", w)) return false;
    w.name = name;
    if (sfx == "-prefill") w.dtype = vkgmm::DType::bf16;
    if (vkgmm::is_quantized(*t)) w.rhs_format = *t;
    else if (sfx == "-ids-decode" || *t != vkgmm::DType::bf16) return false;  // bf16-prefill: every operand bf16
    return true;
  }
  const std::string ids_prefix = "qwen3-ids-t";
  if (name == "ids-decode") {
    // The decode preset routed by ids: 8 tokens, top-2 of 8 experts (16 slots, as decode's 16 rows), whose
    // weights (32 MiB f32) fit one binding: one call streaming the selected experts' weights.
    w.m = 8, w.k = 1024, w.n = 1024, w.groups = 8, w.top_k = 2;
    make_routing(w);
    return true;
  }
  if (name == "moe-grad-ids") {
    // The backward of moe-prefill's scale routed by ids: 2048 tokens, top-2 of 8 experts (4096 slots, as
    // moe-prefill's m), lhs [T, k], the output combined with the routing weights; against the sorted
    // path's backward on the same slots (what moe-grad runs).
    w.m = 2048, w.k = 1024, w.n = 1024, w.groups = 8, w.top_k = 2, w.op = Op::backward;
    make_routing(w);
    return true;
  }
  if (name.rfind(ids_prefix, 0) == 0) {
    // Qwen3-30B-A3B's routed experts (one projection's shape): 128 experts, top-8, k = 2048, n = 768,
    // routed by expert ids, the output combined with the router weights; T tokens per call (decode at
    // 1 and 8, a small and a larger prefill at 64 and 512).
    const std::vector<std::string>& names = ids_preset_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) return false;
    w.m = std::stoll(name.substr(ids_prefix.size()));
    w.k = 2048, w.n = 768, w.groups = 128, w.top_k = 8;
    make_routing(w);
    return true;
  }
  if (name == "moe-prefill") {
    // A prefill batch through an 8-expert MoE layer (Mixtral-like routing, scaled to a CPU driver).
    w.m = 4096, w.k = 1024, w.n = 1024, w.groups = 8, w.dist = Dist::random;
  } else if (name == "moe-fine") {
    // Fine-grained experts (DeepSeek-like): many small experts, skewed routing, 8 experts unused.
    w.m = 4096, w.k = 512, w.n = 512, w.groups = 64, w.dist = Dist::zipf, w.empty_groups = 8;
  } else if (name == "decode") {
    // One decode step: 16 tokens over 8 experts, so groups are tiny and some are empty.
    w.m = 16, w.k = 1024, w.n = 1024, w.groups = 8, w.dist = Dist::random;
  } else if (name == "moe-grad") {
    // The backward of moe-prefill: d_lhs (gmm) and d_rhs (tgmm) together.
    make_preset("moe-prefill", w);
    w.name = name;
    w.op = Op::backward;
  } else {
    return false;
  }
  w.group_sizes = make_group_sizes(w.m, w.groups, w.dist, w.empty_groups, w.seed);
  return true;
}

void make_routing(Workload& w) {
  draw_router(w.m, w.groups, w.top_k, w.seed, w.ids, w.route_weights);
  w.group_sizes.assign(size_t(w.groups), 0);
  for (const int32_t e : w.ids) ++w.group_sizes[size_t(e)];
}

int64_t distinct_experts(const Workload& w) {
  return std::count_if(w.group_sizes.begin(), w.group_sizes.end(), [](int32_t s) { return s > 0; });
}

namespace {
double routed_rows(const Workload& w) {
  return std::accumulate(w.group_sizes.begin(), w.group_sizes.end(), 0.0);
}
}  // namespace

double flops(const Workload& w) {
  const double one = 2.0 * routed_rows(w) * double(w.k) * double(w.n);
  return w.op == Op::backward ? 2 * one : one;
}

// The weights of the groups (experts) with rows: an empty group's are never read.
double rhs_bytes(const Workload& w) {
  return double(distinct_experts(w)) * double(vkgmm::storage_bytes(w.rhs_type(), uint64_t(w.k * w.n)));
}

double bytes(const Workload& w) {
  const double e = double(vkgmm::dtype_size(w.dtype));
  const double mk = double(w.m) * w.k, mn = double(w.m) * w.n, gkn = double(w.groups) * w.k * w.n;
  if (w.routed() && w.op == Op::backward) {
    // Reads lhs, the selected experts' weights, d_out [T, n] f32 and each slot's product [T * top_k, n]
    // f32 its forward saved (d_weights' dot products); writes d_lhs, their d_rhs and d_weights
    // [T, top_k] f32 (no bias, no activation: what the routed backward bench runs).
    const double slots = double(w.m * w.top_k);
    return 2 * rhs_bytes(w) + 2 * e * double(w.m) * double(w.k) + 4.0 * double(w.m) * double(w.n) +
           4.0 * slots * double(w.n) + 4.0 * slots;
  }
  if (w.routed()) {
    const double out = w.combine ? 4.0 * double(w.m) * double(w.n_out())  // f32, token order
                                 : double(vkgmm::dtype_size(w.slots_type)) * double(w.m * w.top_k) * double(w.n_out());
    const double bias = w.bias ? 4.0 * double(distinct_experts(w)) * double(w.n) : 0.0;
    return rhs_bytes(w) + bias + e * double(w.lhs_rows()) * double(w.k) + out;
  }
  switch (w.op) {
    case Op::gmm: return e * (mk + mn) + rhs_bytes(w);  // lhs, rhs -> out
    case Op::tgmm: return e * (mk + mn + gkn);         // lhs, rhs -> out[G] (an empty group's zeros too)
    case Op::backward: return e * (mn + mk + mk + mn + gkn)  // d_out, lhs -> d_lhs, d_rhs[G]
                              + rhs_bytes(w);                 // the groups' rhs, read for d_lhs
  }
  return 0;
}

}  // namespace bench
