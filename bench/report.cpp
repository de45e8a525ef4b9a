#include "report.hpp"

#include <cmath>
#include <set>

#include "format.hpp"
#include "json.hpp"
#include "train_report.hpp"

namespace bench {

double result_flops(const Result& r) {
  return r.layer ? flops(r.layer->up) + flops(r.layer->down) : flops(r.work);
}

double result_bytes(const Result& r) {
  return r.layer ? bytes(r.layer->up) + bytes(r.layer->down) : bytes(r.work);
}

namespace {

using tool::json_string;
using tool::json_strings;

// Counts (FLOPs, bytes) are whole numbers: written exactly, not to json_number's 6 digits.
std::string json_count(double x) { return std::to_string(int64_t(std::llround(x))); }

std::optional<double> ratio(std::optional<double> baseline_ms, double ms) {
  if (!baseline_ms || ms <= 0) return std::nullopt;
  return *baseline_ms / ms;
}

// The single-group run's cost per FLOP over the grouped call's.
std::optional<double> one_group_ratio(const Result& r) {
  const double f = flops(r.work);
  if (!r.one_group_ms || r.time.gpu_ms_median <= 0 || f <= 0 || r.one_group_flops <= 0) return std::nullopt;
  return (*r.one_group_ms / r.one_group_flops) / (r.time.gpu_ms_median / f);
}

// The device path's gpu ms over the host path's (--metadata both): above 1, the device path is slower.
std::optional<double> device_ratio(const Result& r) {
  if (!r.device) return std::nullopt;
  return ratio(r.device->gpu_ms_median, r.time.gpu_ms_median);
}

// --device-grid both: the indirect grid's gpu ms over the upper-bound grid's (below 1: indirect is faster).
std::optional<double> grid_ratio(const Result& r) {
  if (!r.bound_ms) return std::nullopt;
  const double indirect = r.device ? r.device->gpu_ms_median : r.time.gpu_ms_median;
  return indirect > 0 && *r.bound_ms > 0 ? std::optional<double>(indirect / *r.bound_ms) : std::nullopt;
}

// --grid both: the persistent grid's gpu ms over the per-visit grid's, on the host path (the timed one)
// and the device path (below 1: the persistent grid is faster).
std::optional<double> persistent_ratio(const Result& r) {
  if (!r.persistent_ms) return std::nullopt;
  return ratio(*r.persistent_ms, r.time.gpu_ms_median);
}
std::optional<double> device_persistent_ratio(const Result& r) {
  if (!r.device_persistent_ms || !r.device) return std::nullopt;
  return ratio(*r.device_persistent_ms, r.device->gpu_ms_median);
}

// The fields of a workload routed by ids (none for the others).
std::string routed_fields(const Result& r) {
  const Workload& w = r.work;
  if (!w.routed()) return "";
  const double ms = r.time.gpu_ms_median;
  std::optional<double> combine_ms;
  if (r.per_slot_ms) combine_ms = ms - *r.per_slot_ms;
  return ", \"top_k\": " + std::to_string(w.top_k) + ", \"tokens\": " + std::to_string(w.m) +
         ", \"experts\": " + std::to_string(w.groups) + ", \"experts_selected\": " + std::to_string(distinct_experts(w)) +
         ", \"expert_shards\": " + std::to_string(r.expert_shards) +
         ", \"per_slot_gpu_ms_median\": " + json_number(r.per_slot_ms) +
         ", \"combine_ratio\": " + json_number(ratio(ms, r.per_slot_ms.value_or(0))) +
         ", \"combine_ms\": " + json_number(combine_ms) +
         ", \"chain_gpu_ms_median\": " + json_number(r.chain_ms) +
         ", \"ids_over_chain\": " + json_number(ratio(ms, r.chain_ms.value_or(0))) +
         ", \"chain_tiling\": " + (r.chain_ms ? json_string(r.chain_tiling) : "null") +
         ", \"sorted_gpu_ms_median\": " + json_number(r.sorted_ms) +
         ", \"ids_over_sorted\": " + json_number(ratio(ms, r.sorted_ms.value_or(0))) +
         ", \"sorted_tiling\": " + (r.sorted_ms ? json_string(r.sorted_tiling) : "null") +
         ", \"forward_gpu_ms_median\": " + json_number(r.forward_ms) +
         ", \"backward_over_forward\": " + json_number(ratio(ms, r.forward_ms.value_or(0))) +
         ", \"checked_tokens\": " + (r.forward_ms ? std::to_string(r.checked_tokens) : "null") +
         ", \"checked_experts\": " + (r.forward_ms ? std::to_string(r.checked_experts) : "null");
}

// The element types a workload runs: "f32", or "f32+q4_0" with block-format weights.
std::string dtype_label(const Workload& w) {
  std::string s = vkgmm::dtype_name(w.dtype);
  if (w.quantized()) s += std::string("+") + vkgmm::dtype_name(*w.rhs_format);
  return s;
}

// A quantized workload against its unquantized peer, timed alternately with it.
struct QuantComparison {
  const Result* q = nullptr;
  std::optional<double> peer_ms;   // the peer's gpu ms median (absent when it was not timed)
  std::optional<double> speedup;   // peer ms / this gpu ms (= this GFLOP/s over the peer's: same FLOPs)
  double copy_ms = 0;              // vkCmdCopyBuffer of the workload's bytes (its median, alternated)
  double over_copy = 0;            // gpu ms / copy_ms
  std::string target;              // the target set for this comparison, or empty
  std::optional<bool> met;
};

std::vector<QuantComparison> quant_comparisons(const RunInfo& run, const std::vector<Result>& results) {
  std::vector<QuantComparison> out;
  for (const Result& r : results) {
    if (!r.work.quantized() || r.layer) continue;  // a model layer has no unquantized peer
    QuantComparison c;
    c.q = &r;
    const double ms = r.time.gpu_ms_median;
    c.peer_ms = r.peer_ms;
    if (c.peer_ms && ms > 0) c.speedup = *c.peer_ms / ms;
    c.copy_ms = r.copy_ms ? *r.copy_ms : run.ceilings.copy_gbps > 0 ? bytes(r.work) / (run.ceilings.copy_gbps * 1e6) : 0;
    c.over_copy = c.copy_ms > 0 ? ms / c.copy_ms : 0;
    // The peer's weights are of the activations' type: f32 for the ids decode, bf16 for the prefill.
    const vkgmm::DType f = *r.work.rhs_format, peer_weights = r.work.dtype;
    if (r.work.routed() && f == vkgmm::DType::q4_0 && r.work.m <= 8) {
      c.target = "ids decode q4_0: >= 3x the f32 weights' speed, <= 2x the copy time";
      if (peer_weights == vkgmm::DType::f32 && c.speedup)
        c.met = *c.speedup >= 3.0 && c.over_copy > 0 && c.over_copy <= 2.0;
    } else if (!r.work.routed() && r.work.m >= 1024 && (f == vkgmm::DType::q8_0 || f == vkgmm::DType::q4_K)) {
      c.target = "prefill q8_0/q4_K: >= 0.8x the bf16 weights' GFLOP/s";
      if (peer_weights == vkgmm::DType::bf16 && c.speedup) c.met = *c.speedup >= 0.8;
    }
    out.push_back(c);
  }
  return out;
}

void print_quant_table(std::FILE* f, const RunInfo& run, const std::vector<Result>& results) {
  const std::vector<QuantComparison> cs = quant_comparisons(run, results);
  if (cs.empty()) return;
  std::fprintf(f, "\n%-18s %-6s %8s %8s %8s %-14s %8s %8s %8s %8s  %s\n", "weights", "format", "rhs MiB", "gpu ms",
               "GFLOP/s", "peer", "peer ms", "peer/q", "copy ms", "q/copy", "target");
  for (const QuantComparison& c : cs) {
    const Result& r = *c.q;
    std::string target = c.target.empty() ? "-" : c.target;
    if (c.met) target += *c.met ? ": met" : ": NOT met";
    else if (!c.target.empty()) target += ": not comparable (other activation type)";
    std::fprintf(f, "%-18s %-6s %8.2f %8s %8.2f %-14s %8s %8s %8s %8.2f  %s\n", r.work.name.c_str(),
                 vkgmm::dtype_name(*r.work.rhs_format), rhs_bytes(r.work) / (1 << 20),
                 ms_text(r.time.gpu_ms_median).c_str(), r.gflops, (std::string(vkgmm::dtype_name(r.work.dtype)) + " weights").c_str(),
                 c.peer_ms ? ms_text(*c.peer_ms).c_str() : "-", fixed(c.speedup, 2).c_str(),
                 ms_text(c.copy_ms).c_str(), c.over_copy, target.c_str());
  }
  std::fprintf(f,
               "\nBlock-format weights (rhs [G, n, k], blocks along k; rhs MiB: the blocks a call reads, the selected\n"
               "experts' in ids mode). peer: the same call (shape, routing, activations) with unquantized weights of\n"
               "the activations' type, [G, k, n]; peer/q: its gpu ms over the quantized call's (above 1: quantized is\n"
               "faster; also the GFLOP/s ratio, the FLOPs being equal). copy ms: vkCmdCopyBuffer moving the workload's\n"
               "bytes (weights' storage + activations + output); q/copy: gpu ms over it (1/%%copy). The quantized\n"
               "call, its peer and the copy are timed alternately, one of each per round: medians of one run.\n");
}

// Its comparison with its unquantized peer (block-format weights; null for the others).
std::string quant_fields(const Result& r, const std::vector<QuantComparison>& cs) {
  const QuantComparison* c = nullptr;
  for (const QuantComparison& x : cs)
    if (x.q == &r) c = &x;
  std::optional<double> copy_ms, over_copy;
  if (c && c->copy_ms > 0) copy_ms = c->copy_ms, over_copy = c->over_copy;
  return std::string(", \"quant_peer\": ") + (c && c->peer_ms ? json_string(std::string(vkgmm::dtype_name(r.work.dtype)) + " weights") : "null") +
         ", \"quant_peer_gpu_ms_median\": " + json_number(c ? c->peer_ms : std::nullopt) +
         ", \"quant_speedup\": " + json_number(c ? c->speedup : std::nullopt) +
         ", \"copy_ms\": " + json_number(copy_ms) + ", \"time_over_copy\": " + json_number(over_copy) +
         ", \"quant_target\": " + (c && !c->target.empty() ? json_string(c->target) : "null") +
         ", \"quant_target_met\": " + (c && c->met ? (*c->met ? "true" : "false") : "null");
}

// What the memory probes and the eviction were sized by and read (JSON).
std::string probe_fields(const RunInfo& run) {
  const vkgmm::DeviceCeilings& c = run.ceilings;
  const auto size = [](const vkgmm::StreamSize& z) {
    return "{\"bytes_per_run\": " + std::to_string(z.run_bytes()) + ", \"buffer_bytes\": " +
           std::to_string(z.buffer_bytes) + ", \"passes\": " + std::to_string(z.passes) + "}";
  };
  return std::string(", \"cpu_device\": ") + (run.cpu_device ? "true" : "false") +
         ", \"cache_bytes\": " + std::to_string(c.cache.bytes) + ", \"cache_source\": " + json_string(c.cache.source) +
         ", \"read_probe\": " + size(c.read_size) + ", \"read_path\": " + json_string(c.read_path) +
         ", \"copy_probe\": " + size(c.copy_size) + ", \"eviction\": {\"kind\": " + json_string(run.eviction_kind) +
         ", \"bytes\": " + std::to_string(run.eviction_bytes) + "}";
}

void print_header(std::FILE* f, const RunInfo& run) {
  const vkgmm::DeviceCeilings& c = run.ceilings;
  const auto mib = [](uint64_t bytes) { return (unsigned long long)(bytes >> 20); };
  std::fprintf(f, "device:  %s (%s)\n", run.device.c_str(), run.driver.c_str());
  std::fprintf(f, "ceiling: %.1f GFLOP/s fp32 FMA, %.1f GB/s streaming read (%s), %.1f GB/s buffer copy (vkgmm info)\n",
               c.fma_gflops, c.read_gbps, c.read_path.c_str(), c.copy_gbps);
  std::fprintf(f, "memory:  last-level cache %llu MiB (%s); per run the read probe reads %llu MiB, the copy\n"
               "         probe %llu MiB; every timed call starts from evicted caches (a %s of %llu MiB)\n",
               mib(c.cache.bytes), c.cache.source.c_str(), mib(c.read_size.run_bytes()), mib(c.copy_size.run_bytes()),
               run.eviction_kind.c_str(), mib(run.eviction_bytes));
  std::fprintf(f, "openblas: %s\n\n",
               run.openblas.empty() ? "not built in (install libopenblas-dev and rebuild for the CPU baseline)"
                                    : run.openblas.c_str());
}

void print_notes(std::FILE* f, const std::vector<Result>& results) {
  bool any_note = false;
  std::set<std::string> said;  // a model's note once, not once per token count
  const auto say = [&](const std::string& who, const std::string& note) {
    if (!any_note) std::fprintf(f, "\nnotes:\n");
    any_note = true;
    std::fprintf(f, "  %s: %s\n", who.c_str(), note.c_str());
  };
  for (const Result& r : results) {
    const std::string who = r.layer ? r.layer->model->name : r.work.name;
    for (const std::string& failure : r.probe_failures)
      say(r.work.name, "probe failure: " + failure + " (its roof's fraction is printed as probe!)");
    for (const std::string& note : r.notes)
      if (!r.layer || said.insert(who + ": " + note).second) say(who, note);
  }
}

// Workloads routed by ids, in a table of their own (their baselines are not the grouped ones').
void print_routed_table(std::FILE* f, const std::vector<Result>& results) {
  std::fprintf(f, "%-16s %4s %5s %4s %4s %4s %-10s %-10s %8s %8s %8s %7s %8s %7s %6s %6s %6s %4s %8s %7s %8s %7s %8s %7s\n",
               "workload", "T", "k", "n", "E", "topk", "dtype", "tiling", "gpu ms", "gpu min", "wall ms", "host ms",
               "GFLOP/s", "GB/s", "%read", "%copy", "%ceil", "hit", "slot ms", "c/slot", "chain ms", "ids/ch", "sort ms",
               "ids/so");
  for (const Result& r : results) {
    const Workload& w = r.work;
    const Times& t = r.time;
    const auto opt_ms = [](std::optional<double> x) { return x ? ms_text(*x) : std::string("-"); };
    std::fprintf(f,
                 "%-16s %4lld %5lld %4lld %4lld %4lld %-10s %-10s %8s %8s %8s %7s %8.2f %7.2f %6s %5.1f%% %6s %4lld "
                 "%8s %7s %8s %7s %8s %7s\n",
                 w.name.c_str(), (long long)w.m, (long long)w.k, (long long)w.n, (long long)w.groups,
                 (long long)w.top_k, dtype_label(w).c_str(), r.tiling.c_str(), ms_text(t.gpu_ms_median).c_str(),
                 ms_text(t.gpu_ms_min).c_str(), ms_text(t.wall_ms_median).c_str(), ms_text(t.host_ms_median).c_str(),
                 r.gflops, r.gbps, roof_percent(r.read_fraction).c_str(), 100.0 * r.copy_fraction,
                 roof_percent(r.ceiling_fraction).c_str(), (long long)distinct_experts(w), opt_ms(r.per_slot_ms).c_str(),
                 fixed(ratio(t.gpu_ms_median, r.per_slot_ms.value_or(0)), 3).c_str(), opt_ms(r.chain_ms).c_str(),
                 fixed(ratio(t.gpu_ms_median, r.chain_ms.value_or(0)), 3).c_str(), opt_ms(r.sorted_ms).c_str(),
                 fixed(ratio(t.gpu_ms_median, r.sorted_ms.value_or(0)), 3).c_str());
  }
  std::fprintf(f,
               "\nRouted by expert ids (vkgmm::Routing; T tokens, E experts, top-k distinct experts per token from a\n"
               "seeded router): gpu ms is the call with the output combined in token order with the router weights\n"
               "[T, n]. GFLOP/s counts 2*T*topk*k*n; GB/s the selected experts' weights once (hit: how many of the E\n"
               "were selected) + the activations + the output, over gpu ms; %%read: GB/s over the streaming read's\n"
               "bandwidth (the memory roof; 100%%: the bytes moved as fast as the device reads memory); %%copy: a copy\n"
               "of those bytes' gpu ms over the call's (vkCmdCopyBuffer, timed alternately with it; above 100%%: the\n"
               "call moves them faster than a copy does).\n"
               "Timed alternately with it: slot ms, the same call per slot ([T, topk, n], no combine), c/slot the\n"
               "combined call's gpu ms over it (the combine's cost; above 1: combining costs that much); chain ms,\n"
               "the unfused chain (count + permute dispatch, gmm with device group sizes, un-permute/combine dispatch,\n"
               "one command buffer), ids/ch the combined call's gpu ms over it (above 1: the chain is faster); sort ms,\n"
               "the grouped gemm alone on rows sorted on the host (host group sizes, per-slot output), ids/so the\n"
               "combined call over it (above 1: the sorted gemm alone is faster). Every call starts from evicted\n"
               "caches, as a model's layer finds its experts in none (bench/eviction.hpp).\n");
}

// Routed backwards (moe-grad-ids), in a table of their own: their peers are a forward and a backward.
void print_routed_grad_table(std::FILE* f, const std::vector<Result>& results) {
  std::fprintf(f, "%-16s %5s %5s %5s %4s %4s %-6s %-15s %8s %8s %8s %6s %8s %7s %-15s %8s %6s %7s\n", "routed backward",
               "T", "k", "n", "E", "topk", "dtype", "tiling", "bwd ms", "bwd min", "GFLOP/s", "%ceil", "fwd ms",
               "bwd/fwd", "sort tiling", "sort ms", "ids/so", "checked");
  for (const Result& r : results) {
    const Workload& w = r.work;
    const double ms = r.time.gpu_ms_median;
    const std::string checked = std::to_string(r.checked_tokens) + "t/" + std::to_string(r.checked_experts) + "e";
    std::fprintf(f, "%-16s %5lld %5lld %5lld %4lld %4lld %-6s %-15s %8s %8s %8.2f %6s %8s %7s %-15s %8s %6s %7s\n",
                 w.name.c_str(), (long long)w.m, (long long)w.k, (long long)w.n, (long long)w.groups, (long long)w.top_k,
                 dtype_label(w).c_str(), r.tiling.c_str(), ms_text(ms).c_str(), ms_text(r.time.gpu_ms_min).c_str(),
                 r.gflops, roof_percent(r.ceiling_fraction).c_str(), r.forward_ms ? ms_text(*r.forward_ms).c_str() : "-",
                 fixed(ratio(ms, r.forward_ms.value_or(0)), 2).c_str(), r.sorted_tiling.c_str(),
                 r.sorted_ms ? ms_text(*r.sorted_ms).c_str() : "-", fixed(ratio(ms, r.sorted_ms.value_or(0)), 2).c_str(),
                 checked.c_str());
  }
  std::fprintf(f,
               "\nThe backward of a gmm routed by ids (combined with the routing weights, no bias, no activation):\n"
               "vkgmm::GmmBackwardPlan writing d_lhs [T, k], d_rhs [E, k, n] and d_weights [T, topk], reading each\n"
               "slot's product as its forward saved it (nothing recomputed). GFLOP/s counts 4*T*topk*k*n (d_lhs and\n"
               "d_rhs). Timed alternately with it, one call of each per round, every call\n"
               "from evicted caches, plans built once: fwd ms, the routed forward (GmmPlan, combined), bwd/fwd the\n"
               "backward's gpu ms over it; sort ms, the sorted path's backward (the slots' rows in expert order on\n"
               "the host, d_out times the routing weight, an unrouted GmmBackwardPlan with host group sizes: what\n"
               "moe-grad runs; no d_weights), ids/so the routed backward's gpu ms over it (above 1: the sorted\n"
               "backward is faster). checked: the sampled tokens (t: their out, d_lhs and d_weights rows) and experts\n"
               "(e: their d_rhs) compared with vkgmm::reference before timing.\n");
}

// The routed tables: the forwards', then the backwards'.
void print_routed_tables(std::FILE* f, const std::vector<Result>& routed) {
  std::vector<Result> forwards, backwards;
  for (const Result& r : routed) (r.work.op == Op::backward ? backwards : forwards).push_back(r);
  if (!forwards.empty()) print_routed_table(f, forwards);
  if (!forwards.empty() && !backwards.empty()) std::fprintf(f, "\n");
  if (!backwards.empty()) print_routed_grad_table(f, backwards);
}

// A model layer's own fields (none for other workloads): the model, its scaled shapes and per-token rate.
std::string layer_fields(const Result& r) {
  if (!r.layer) return "";
  const ModelLayer& l = *r.layer;
  const ModelSpec& m = *l.model;
  const auto shape = [](const Workload& w) {
    return "{\"k\": " + std::to_string(w.k) + ", \"n\": " + std::to_string(w.n) + ", \"n_out\": " +
           std::to_string(w.n_out()) + ", \"flop\": " + json_count(flops(w)) + ", \"bytes\": " + json_count(bytes(w)) + "}";
  };
  return ", \"model\": " + json_string(m.name) + ", \"model_title\": " + json_string(m.title) +
         ", \"config\": " + json_string(m.citation) + ", \"scale\": " + std::to_string(l.scale) +
         ", \"hidden\": " + std::to_string(l.up.k) + ", \"expert_size\": " + std::to_string(l.up.n_out()) +
         ", \"published_hidden\": " + std::to_string(m.hidden) +
         ", \"published_expert_size\": " + std::to_string(m.expert_size) + ", \"bias\": " + (m.bias ? "true" : "false") +
         ", \"weights\": " + json_string(vkgmm::dtype_name(l.up.rhs_type())) +
         ", \"down_weights\": " + json_string(vkgmm::dtype_name(l.down.rhs_type())) +
         ", \"tokens_per_s\": " + json_number(double(l.tokens) / (r.time.gpu_ms_median * 1e-3)) +
         ", \"up\": " + shape(l.up) + ", \"down\": " + shape(l.down) + train_json(r);
}

// A layer's types: dtype_label's, and "/FMT" where its down projection's weights are in another format.
std::string layer_label(const ModelLayer& l) {
  const std::string up = dtype_label(l.up);
  return l.down.rhs_type() == l.up.rhs_type() ? up : up + "/" + vkgmm::dtype_name(l.down.rhs_type());
}

// Model layers (--model), each the whole layer's expert part at T tokens.
void print_model_table(std::FILE* f, const std::vector<Result>& results, bool blank_line_first) {
  if (blank_line_first) std::fprintf(f, "\n");
  std::fprintf(f, "%-24s %5s %6s %6s %4s %4s %-14s %5s %-12s %8s %8s %9s %8s %7s %6s %6s %6s\n", "model layer", "T",
               "hidden", "expert", "E", "topk", "weights", "scale", "tiling", "gpu ms", "gpu min", "tokens/s", "GFLOP/s",
               "GB/s", "%read", "%ceil", "flop/B");
  for (const Result& r : results) {
    const ModelLayer& l = *r.layer;
    const Times& t = r.time;
    std::fprintf(f, "%-24s %5lld %6lld %6lld %4lld %4lld %-14s %5lld %-12s %8s %8s %9.0f %8.2f %7.2f %6s %6s %6.1f\n",
                 r.work.name.c_str(), (long long)l.tokens, (long long)l.up.k, (long long)l.up.n_out(),
                 (long long)l.up.groups, (long long)l.up.top_k, layer_label(l).c_str(), (long long)l.scale,
                 r.tiling.c_str(), ms_text(t.gpu_ms_median).c_str(), ms_text(t.gpu_ms_min).c_str(),
                 double(l.tokens) / (t.gpu_ms_median * 1e-3), r.gflops, r.gbps, roof_percent(r.read_fraction).c_str(),
                 roof_percent(r.ceiling_fraction).c_str(), result_flops(r) / result_bytes(r));
  }
  const int64_t scale = results.front().layer->scale;
  std::fprintf(f,
               "\nModel layers (--model): one MoE layer's expert matmuls, routed by ids from a seeded router, at T\n"
               "tokens: gate/up (the tokens gathered by expert, [gate | up] with the model's gated activation\n"
               "fused, per slot) then down (the slots combined in token order with the router weights), one\n"
               "command buffer; gpu ms per layer.\n"
               "hidden and expert: the sizes run, %s.\n"
               "tokens/s: T over gpu ms (the expert part only). GFLOP/s: 2*T*topk*(hidden*2*expert + expert*hidden);\n"
               "GB/s: the selected experts' weights (and biases) of both projections, the activations, the slots\n"
               "between them and the output; %%read: GB/s over the streaming read's bandwidth (the memory roof);\n"
               "%%ceil: GFLOP/s over the FMA ceiling; flop/B: the arithmetic intensity (scripts/roofline.py plots it\n"
               "against both roofs). Every layer starts from evicted caches.\n",
               scale == 1 ? "the published ones (--scale 1)"
                          : ("the published ones divided by --scale " + std::to_string(scale) +
                             " (rounded to whole blocks)").c_str());
}

}  // namespace

void print_table(std::FILE* f, const RunInfo& run, const std::vector<Result>& all) {
  print_header(f, run);
  std::vector<Result> results, routed, layers;
  for (const Result& r : all) (r.layer ? layers : r.work.routed() ? routed : results).push_back(r);
  if (results.empty()) {
    print_routed_tables(f, routed);
    if (!layers.empty()) print_model_table(f, layers, !routed.empty());
    print_train_table(f, layers);
    print_quant_table(f, run, all);
    print_notes(f, all);
    return;
  }
  if (!results.empty() && results.front().metadata == "device")
    std::fprintf(f, "--metadata device: the times are the device path's (group sizes in a device buffer)\n\n");
  std::fprintf(f, "%-12s %-8s %5s %5s %5s %4s %-9s %-12s %9s %9s %9s %8s %9s %8s %7s %7s %7s %7s %8s %7s %6s %6s %6s %7s %7s %7s\n",
               "workload", "op", "m", "k", "n", "G", "dtype", "tiling", "gpu ms", "gpu min", "wall ms", "host ms",
               "dev ms", "dev/host", "ind/bnd", "pers/pv", "dev p/pv", "app/own", "GFLOP/s", "GB/s", "%read", "%copy",
               "%ceil", "G=1 x", "naive x", "BLAS x");
  for (const Result& r : results) {
    const Workload& w = r.work;
    const Times& t = r.time;
    std::fprintf(f,
                 "%-12s %-8s %5lld %5lld %5lld %4lld %-9s %-12s %9s %9s %9s %8s %9s %8s %7s %7s %7s %7s %8.2f %7.2f %6s "
                 "%5.1f%% %6s %7s %7s %7s\n",
                 w.name.c_str(), op_name(w.op), (long long)w.m, (long long)w.k, (long long)w.n, (long long)w.groups,
                 dtype_label(w).c_str(), r.tiling.c_str(), ms_text(t.gpu_ms_median).c_str(),
                 ms_text(t.gpu_ms_min).c_str(), ms_text(t.wall_ms_median).c_str(), ms_text(t.host_ms_median).c_str(),
                 r.device ? ms_text(r.device->gpu_ms_median).c_str() : "-", fixed(device_ratio(r), 3).c_str(),
                 fixed(grid_ratio(r), 3).c_str(), fixed(persistent_ratio(r), 3).c_str(),
                 fixed(device_persistent_ratio(r), 3).c_str(), fixed(r.app_ratio, 3).c_str(),
                 r.gflops, r.gbps, roof_percent(r.read_fraction).c_str(), 100.0 * r.copy_fraction,
                 roof_percent(r.ceiling_fraction).c_str(), fixed(one_group_ratio(r), 2).c_str(), fixed(ratio(r.naive_ms, t.gpu_ms_median), 2).c_str(),
                 fixed(ratio(r.openblas_ms, t.gpu_ms_median), 2).c_str());
  }
  std::fprintf(f,
               "\ngpu ms: device time per call from timestamp queries (median and min of the reps), every call from\n"
               "evicted caches; wall ms: the whole call on the host (plan: validation + metadata build and upload,\n"
               "then record, submit, wait); host ms: the plan part alone. dev ms: the same call with the group sizes\n"
               "in a device buffer (--metadata both: the metadata built on the GPU by every call, the host path's\n"
               "tiling), timed alternately with the host path's. GB/s: bytes of the inputs and outputs over gpu ms.\n"
               "Each ratio and what a value above 1 (100%%) means; - means not measured:\n"
               "  dev/host  the device path's gpu ms over the host path's: building the metadata on the GPU costs more\n"
               "  ind/bnd   (--device-grid both) the device path on the indirect grid over the upper-bound grid, timed\n"
               "            alternately: vkCmdDispatchIndirect costs more\n"
               "  pers/pv   (--grid both) the host path on the persistent grid over the per-visit grid (dev p/pv: the\n"
               "            device path's), timed alternately: the persistent grid costs more\n"
               "  app/own   the host path's call on app-owned VkBuffers (vkgmm's memory type, lent with borrow_buffer)\n"
               "            over the same call on vkgmm's own buffers, timed alternately: borrowed buffers cost more\n"
               "  %%read     GB/s over the streaming read's bandwidth (the memory roof, vkgmm info); probe! where the\n"
               "            call, from evicted caches, moved its bytes faster than the probe read (see the notes)\n"
               "  %%copy     a copy of the same bytes' gpu ms (vkCmdCopyBuffer, half read, half written, timed\n"
               "            alternately) over the call's: the call moves its bytes faster than a copy does\n"
               "  %%ceil     GFLOP/s over the FMA ceiling; probe! where the call beat it (the probe did not measure\n"
               "            the device's best: see the notes), never a figure above 100%%\n"
               "  G=1 x     the same m, k, n as one group (one expert's weights instead of G: fewer bytes), its own\n"
               "            automatic tiling, timed alternately with the grouped call: its gpu ms per FLOP over the\n"
               "            grouped call's; above 1: one group costs more per FLOP (below 1: grouping costs that much)\n"
               "  naive x   one dispatch per group on this device over vkgmm's gpu ms: vkgmm is faster\n"
               "  BLAS x    cblas_sgemm per group on the CPU (from evicted host caches) over vkgmm's gpu ms: vkgmm is\n"
               "            faster\n");
  if (!routed.empty()) {
    std::fprintf(f, "\n");
    print_routed_tables(f, routed);
  }
  if (!layers.empty()) print_model_table(f, layers, true);
  print_train_table(f, layers);
  print_quant_table(f, run, all);
  print_notes(f, all);
}

void print_json(std::FILE* f, const RunInfo& run, const std::vector<Result>& results) {
  const std::vector<QuantComparison> comparisons = quant_comparisons(run, results);
  std::string s = "{\"device\": " + json_string(run.device) + ", \"driver\": " + json_string(run.driver) +
                  ", \"ceiling_gflops\": " + json_number(run.ceilings.fma_gflops) +
                  ", \"read_gbps\": " + json_number(run.ceilings.read_gbps) +
                  ", \"copy_gbps\": " + json_number(run.ceilings.copy_gbps) + probe_fields(run) + ", \"openblas\": " +
                  (run.openblas.empty() ? "null" : json_string(run.openblas)) + ", \"workloads\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const Workload& w = r.work;
    std::string sizes = "[";
    for (size_t g = 0; g < w.group_sizes.size(); ++g) sizes += (g ? ", " : "") + std::to_string(w.group_sizes[g]);
    sizes += "]";
    const auto dev = [&](double Times::*field) -> std::optional<double> {
      if (!r.device) return std::nullopt;
      return (*r.device).*field;
    };
    const std::string notes = json_strings(r.notes);
    s += std::string(i ? ", " : "") + "{\"name\": " + json_string(w.name) + ", \"op\": " + json_string(op_name(w.op)) +
         ", \"m\": " + std::to_string(w.m) + ", \"k\": " + std::to_string(w.k) + ", \"n\": " + std::to_string(w.n) +
         ", \"groups\": " + std::to_string(w.groups) +
         ", \"dist\": " + json_string(w.routed() ? "router" : dist_name(w.dist)) +
         ", \"group_sizes\": " + sizes + ", \"dtype\": " + json_string(vkgmm::dtype_name(w.dtype)) +
         ", \"rhs_format\": " + (w.quantized() ? json_string(vkgmm::dtype_name(*w.rhs_format)) : "null") +
         ", \"rhs_bytes\": " + std::to_string(int64_t(rhs_bytes(w))) + quant_fields(r, comparisons) +
         ", \"metadata\": " + json_string(r.metadata) +
         ", \"tiling\": " + json_string(r.tiling) + ", \"reps\": " + std::to_string(r.reps) +
         ", \"gpu_ms_median\": " + json_number(r.time.gpu_ms_median) +
         ", \"gpu_ms_min\": " + json_number(r.time.gpu_ms_min) +
         ", \"wall_ms_median\": " + json_number(r.time.wall_ms_median) +
         ", \"host_ms_median\": " + json_number(r.time.host_ms_median) +
         ", \"device_tiling\": " + (r.device ? json_string(r.device_tiling) : "null") +
         ", \"device_gpu_ms_median\": " + json_number(dev(&Times::gpu_ms_median)) +
         ", \"device_gpu_ms_min\": " + json_number(dev(&Times::gpu_ms_min)) +
         ", \"device_wall_ms_median\": " + json_number(dev(&Times::wall_ms_median)) +
         ", \"device_host_ms_median\": " + json_number(dev(&Times::host_ms_median)) +
         ", \"device_ratio\": " + json_number(device_ratio(r)) + ", \"device_grid\": " + json_string(r.grid) +
         ", \"bound_gpu_ms_median\": " + json_number(r.bound_ms) +
         ", \"indirect_over_bound\": " + json_number(grid_ratio(r)) + ", \"grid\": " + json_string(r.workgroups) +
         ", \"persistent_gpu_ms_median\": " + json_number(r.persistent_ms) +
         ", \"persistent_over_per_visit\": " + json_number(persistent_ratio(r)) +
         ", \"device_persistent_gpu_ms_median\": " + json_number(r.device_persistent_ms) +
         ", \"device_persistent_over_per_visit\": " + json_number(device_persistent_ratio(r)) +
         ", \"app_buffers_gpu_ms_median\": " + json_number(r.app_ms) +
         ", \"app_buffers_ratio\": " + json_number(r.app_ratio) +
         ", \"app_memory_flags\": " + (r.app_ms ? std::to_string(r.app_memory_flags) : "null") +
         ", \"own_memory_flags\": " + (r.app_ms ? std::to_string(r.own_memory_flags) : "null") +
         ", \"plan\": " + json_string(r.plan) + ", \"timed_calls\": " + std::to_string(r.timed_calls) +
         ", \"evictions\": " + std::to_string(r.evictions) + ", \"gflops\": " + json_number(r.gflops) +
         ", \"gbps\": " + json_number(r.gbps) + ", \"flop\": " + json_count(result_flops(r)) +
         ", \"bytes\": " + json_count(result_bytes(r)) + ", \"ceiling_fraction\": " + json_number(r.ceiling_fraction) +
         ", \"read_fraction\": " + json_number(r.read_fraction) +
         ", \"probe_failures\": " + json_strings(r.probe_failures) +
         ", \"copy_fraction\": " + json_number(r.copy_fraction) + ", \"copy_gpu_ms_median\": " + json_number(r.copy_ms) +
         ", \"baseline_one_group_ms\": " + json_number(r.one_group_ms) +
         ", \"baseline_one_group_tiling\": " + (r.one_group_ms ? json_string(r.one_group_tiling) : "null") +
         ", \"baseline_one_group_ratio\": " + json_number(one_group_ratio(r)) +
         ", \"baseline_naive_ms\": " + json_number(r.naive_ms) +
         ", \"baseline_naive_ratio\": " + json_number(ratio(r.naive_ms, r.time.gpu_ms_median)) +
         ", \"baseline_openblas_ms\": " + json_number(r.openblas_ms) +
         ", \"baseline_openblas_ratio\": " + json_number(ratio(r.openblas_ms, r.time.gpu_ms_median)) +
         routed_fields(r) + layer_fields(r) + ", \"notes\": " + notes + "}";
  }
  s += "]}\n";
  std::fputs(s.c_str(), f);
}

void print_sweep_table(std::FILE* f, const RunInfo& run, const std::vector<SweepResult>& results) {
  print_header(f, run);
  std::fprintf(f, "%-12s %-8s %-14s %10s %-14s %10s %8s\n", "workload", "op", "default tiling", "gpu ms",
               "best tiling", "gpu ms", "speedup");
  for (const SweepResult& r : results) {
    const SweepResult::Tried& best = r.tried[r.best];
    const SweepResult::Tried& def = r.tried.front();
    std::fprintf(f, "%-12s %-8s %-14s %10s %-14s %10s %7.2fx\n", r.work.name.c_str(), op_name(r.work.op),
                 def.tiling.c_str(), ms_text(def.gpu_ms_median).c_str(), best.tiling.c_str(),
                 ms_text(best.gpu_ms_median).c_str(), def.gpu_ms_median / best.gpu_ms_median);
  }
  std::fprintf(f,
               "\nEach tiling is the table's host-path call with that tiling (the default one the very call the table\n"
               "times), timed as the table times it: its reps, warmup, every call from evicted caches, the tilings\n"
               "alternating one call each per round. speedup: the default's gpu ms over the best's (above 1: the best\n"
               "is faster).\n");
  for (const SweepResult& r : results)
    if (!r.not_cached.empty()) std::fprintf(f, "%s: %s\n", r.work.name.c_str(), r.not_cached.c_str());
  if (!results.empty() && results.front().not_cached.empty())
    std::fprintf(f, "saved to %s: `vkgmm bench --tiling auto` runs these tilings.\n", results.front().cache_file.c_str());
}

void print_sweep_json(std::FILE* f, const RunInfo& run, const std::vector<SweepResult>& results) {
  std::string s = "{\"device\": " + json_string(run.device) + ", \"ceiling_gflops\": " +
                  json_number(run.ceilings.fma_gflops) + ", \"read_gbps\": " + json_number(run.ceilings.read_gbps) +
                  probe_fields(run) + ", \"sweep\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const SweepResult& r = results[i];
    std::string tried = "[";
    for (size_t j = 0; j < r.tried.size(); ++j)
      tried += std::string(j ? ", " : "") + "{\"tiling\": " + json_string(r.tried[j].tiling) +
               ", \"gpu_ms_median\": " + json_number(r.tried[j].gpu_ms_median) + "}";
    tried += "]";
    s += std::string(i ? ", " : "") + "{\"name\": " + json_string(r.work.name) + ", \"op\": " +
         json_string(op_name(r.work.op)) + ", \"default_tiling\": " + json_string(r.default_tiling) +
         ", \"best_tiling\": " + json_string(r.tried[r.best].tiling) +
         ", \"best_gpu_ms_median\": " + json_number(r.tried[r.best].gpu_ms_median) + ", \"tried\": " + tried +
         ", \"cache_file\": " + json_string(r.cache_file) +
         ", \"cached\": " + (r.not_cached.empty() ? "true" : "false") +
         ", \"default_plan\": " + json_string(r.default_plan) + ", \"reps\": " + std::to_string(r.reps) +
         ", \"timed_calls\": " + std::to_string(r.timed_calls) + ", \"evictions\": " + std::to_string(r.evictions) +
         "}";
  }
  s += "]}\n";
  std::fputs(s.c_str(), f);
}

}  // namespace bench
