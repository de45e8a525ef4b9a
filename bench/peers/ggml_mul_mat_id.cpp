// A peer for `vkgmm bench`: ggml's Vulkan backend (llama.cpp's) timed on the shapes of vkgmm's bench
// presets, through the op llama.cpp runs MoE experts with, GGML_OP_MUL_MAT_ID, and through a plain
// GGML_OP_MUL_MAT of the same rows against one expert (the dense ceiling of the same FLOPs).
//
// Built by bench/peers/fetch_ggml.sh against ggml's prebuilt libraries (npm @node-llama-cpp/linux-x64-vulkan
// 3.22.1 = ggml 0.25.1, built with GGML_BACKEND_DL: the Vulkan backend is a module loaded at run time)
// and never by CMake or ctest. Prints one JSON object per line on stdout, progress on stderr:
//   {"peer":"ggml-vulkan","workload":"ids-decode","op":"mul_mat_id","weights":"f32",...,"median_ms":0.12}
//
// ggml's layouts (ne0 is the contiguous dimension):
//   experts  as   [k, n, E]     (each expert n rows of k: GGUF's layout, vkgmm's transpose_rhs)
//   input    b    [k, 1, T]     (one row per token, broadcast over its top_k slots)
//   ids           [top_k, T]    int32 expert per slot
//   output        [n, top_k, T] f32, per slot; "mul_mat_id+combine" also weights the slots with the
//                               router's weights and sums them per token as llama.cpp's MoE layer does
//                               (ggml_mul, then ggml_add over the top_k views): vkgmm's combined output.
// The gmm presets (moe-prefill, moe-fine, decode: every row to exactly one expert) are ids with top_k = 1,
// rows in group order. Routing and group sizes are bench/workloads.cpp's, copied below (same seeds, same
// std:: distributions: the same sizes when built with the same libstdc++ headers; printed for a check).
//
// Timing: every call starts from evicted caches as in vkgmm's bench (a streaming read of --evict-mib
// MiB, a graph of its own, untimed); then wall clock around ggml_backend_graph_compute (which submits
// and waits) and ggml_backend_synchronize: the median over the reps, after warm-up calls (the first
// compiles ggml's pipelines); reps: at least 5 and ~0.25 s, at most 100, unless --reps. Host submission
// is included: for calls of a few microseconds, run with GGML_VK_PERF_LOGGER=1 and
// GGML_VK_PERF_LOGGER_FREQUENCY=1000000 too (ggml's timestamp queries per op, warm-up and eviction
// included; printed to stderr when each weight type's backend is freed, after its "... done" line).
//
// usage: ggml_mul_mat_id [--quick] [--list] [--preset NAME]... [--reps N] [--warmup N] [--evict-mib N]
//   presets   moe-prefill moe-fine decode ids-decode qwen3-ids-t1 -t8 -t64 -t512 (default: all); weights
//             f32, and q4_0 / q8_0 (ids-decode) or q4_0 (qwen3-ids-*) as vkgmm's quant presets
//   --evict-mib  the eviction read before each call (default 256, 5x an H100's L2; 0: none)
//   --quick   k and n / 4, the gmm presets' rows / 8, 3 reps, 16 MiB eviction (a smoke test)
//   --list    the Vulkan devices ggml sees, then exit
// environment: GGML_VK_VISIBLE_DEVICES=0 to accept a CPU device (lavapipe), which ggml skips by default.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "routing_draws.hpp"  // the bench's own draws: the same routing as vkgmm bench

namespace {

// ---- the presets (bench/workloads.cpp's make_preset) ----------------------------------------------------
struct Preset {
  std::string name;
  int64_t T = 0, k = 0, n = 0, E = 0, top_k = 1;
  std::vector<int32_t> ids;      // [T, top_k]
  std::vector<float> weights;    // [T, top_k] (router weights; 1 for the gmm presets)
  std::vector<int32_t> sizes;    // slots per expert
  std::vector<ggml_type> types;  // expert weight types to time
};

// The gmm presets (rows sorted by group, top_k = 1) and the ids presets; quick: smaller k, n and rows.
bool make_preset(const std::string& name, bool quick, Preset& p) {
  p = Preset{};
  p.name = name;
  const int64_t kn_div = quick ? 4 : 1, rows_div = quick ? 8 : 1;
  struct Gmm { const char* name; int64_t m, k, n, E; Dist dist; int64_t empty; };
  static const Gmm gmm[] = {{"moe-prefill", 4096, 1024, 1024, 8, Dist::random, 0},
                            {"moe-fine", 4096, 512, 512, 64, Dist::zipf, 8},
                            {"decode", 16, 1024, 1024, 8, Dist::random, 0}};
  for (const Gmm& g : gmm) {
    if (name != g.name) continue;
    p.T = std::max<int64_t>(16, g.m / rows_div), p.k = g.k / kn_div, p.n = g.n / kn_div, p.E = g.E, p.top_k = 1;
    p.sizes = make_group_sizes(p.T, p.E, g.dist, g.empty, 1);
    for (int64_t e = 0; e < p.E; ++e) p.ids.insert(p.ids.end(), size_t(p.sizes[size_t(e)]), int32_t(e));
    p.weights.assign(p.ids.size(), 1.0f);
    p.types = {GGML_TYPE_F32};
    return true;
  }
  if (name == "ids-decode") {
    p.T = 8, p.k = 1024 / kn_div, p.n = 1024 / kn_div, p.E = 8, p.top_k = 2;
    p.types = {GGML_TYPE_F32, GGML_TYPE_Q4_0, GGML_TYPE_Q8_0};  // vkgmm: ids-decode, q4_0-/q8_0-ids-decode
  } else if (name == "qwen3-ids-t1" || name == "qwen3-ids-t8" || name == "qwen3-ids-t64" || name == "qwen3-ids-t512") {
    p.T = std::stoll(name.substr(std::strlen("qwen3-ids-t")));
    p.k = 2048 / kn_div, p.n = 768 / kn_div, p.E = 128, p.top_k = 8;
    p.types = {GGML_TYPE_F32, GGML_TYPE_Q4_0};
  } else {
    return false;
  }
  draw_router(p.T, p.E, p.top_k, 1, p.ids, p.weights);
  p.sizes.assign(size_t(p.E), 0);
  for (int32_t e : p.ids) ++p.sizes[size_t(e)];
  return true;
}

const std::vector<std::string> kDefaultPresets = {"moe-prefill", "moe-fine", "decode", "ids-decode",
                                                  "qwen3-ids-t1", "qwen3-ids-t8", "qwen3-ids-t64", "qwen3-ids-t512"};

// ---- timing -------------------------------------------------------------------------------------------
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A streaming read of `bytes` (ggml_sum_rows over an f32 tensor) in its own graph: run before every
// call so that no call finds its weights in the GPU's L2 (H100: 50 MB) or, on lavapipe, the host's caches.
struct Eviction {
  ggml_context* ctx = nullptr;
  ggml_backend_buffer_t buf = nullptr;
  ggml_cgraph* graph = nullptr;
  Eviction(ggml_backend_dev_t dev, size_t bytes) {
    if (bytes == 0) return;
    ggml_init_params ip = {ggml_tensor_overhead() * 4 + ggml_graph_overhead(), nullptr, true};
    ctx = ggml_init(ip);
    const int64_t row = 1 << 16;  // 256 KiB rows
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, row, std::max<int64_t>(1, int64_t(bytes / 4 / row)));
    ggml_tensor* s = ggml_sum_rows(ctx, x);
    graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, s);
    buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(dev));
    ggml_backend_buffer_clear(buf, 0);
  }
  void operator()(ggml_backend_t backend) const {
    if (graph) ggml_backend_graph_compute(backend, graph);
  }
  ~Eviction() {
    if (buf) ggml_backend_buffer_free(buf);
    if (ctx) ggml_free(ctx);
  }
};

struct Timing { double median = 0, min = 0; int reps = 0; };

// Warm-up calls, then reps timed calls (reps <= 0: at least 5 and ~0.25 s, at most 100), each after the eviction.
Timing time_graph(ggml_backend_t backend, ggml_cgraph* g, const Eviction& evict, int warmup, int reps) {
  double last = 0;
  for (int i = 0; i < std::max(1, warmup); ++i) {
    evict(backend);
    const double t0 = now_ms();
    if (ggml_backend_graph_compute(backend, g) != GGML_STATUS_SUCCESS) return Timing{};  // reps 0: failed
    ggml_backend_synchronize(backend);
    last = now_ms() - t0;
  }
  if (reps <= 0) reps = int(std::clamp(std::ceil(250.0 / std::max(last, 1e-3)), 5.0, 100.0));
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    evict(backend);
    const double t0 = now_ms();
    ggml_backend_graph_compute(backend, g);
    ggml_backend_synchronize(backend);
    ms.push_back(now_ms() - t0);
  }
  std::sort(ms.begin(), ms.end());
  Timing t;
  t.reps = reps;
  t.min = ms.front();
  t.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return t;
}

// ---- one preset ---------------------------------------------------------------------------------------
// Deterministic values in [-1, 1) (the values do not matter to the timing, only that they are finite).
void fill(std::vector<float>& v, uint32_t seed) {
  uint32_t x = seed * 747796405u + 2891336453u;
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    f = float(x >> 8) / float(1 << 23) - 1.0f;
  }
}

std::string json_sizes(const std::vector<int32_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

void run_preset(ggml_backend_dev_t dev, const Preset& p, bool quick, int warmup, int reps, const Eviction& evict) {
  const std::string device = ggml_backend_dev_description(dev);
  const int64_t slots = p.T * p.top_k;
  const int64_t distinct = std::count_if(p.sizes.begin(), p.sizes.end(), [](int32_t s) { return s > 0; });
  for (ggml_type type : p.types) {
    // A backend (ggml's per-stream state: command and descriptor pools) per weight type, freed after the
    // buffers it used: on lavapipe (Mesa 22.3) a backend that outlived a freed buffer read freed memory
    // in later graphs (valgrind), so nothing is freed under a live backend. With GGML_VK_PERF_LOGGER
    // each backend prints its own timings when freed.
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    if (!backend) {
      std::fprintf(stderr, "ggml peer: could not start the Vulkan backend\n");
      return;
    }
    // One context of tensor metadata (no_alloc), its tensors in one backend buffer.
    ggml_init_params ip = {ggml_tensor_overhead() * (16 + 2 * size_t(p.top_k)) + 3 * ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(ip);
    ggml_tensor* as = ggml_new_tensor_3d(ctx, type, p.k, p.n, p.E);
    ggml_tensor* b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, p.k, 1, p.T);
    ggml_tensor* ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, p.top_k, p.T);
    ggml_tensor* rw = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 1, p.top_k, p.T);
    ggml_tensor* w1 = ggml_new_tensor_2d(ctx, type, p.k, p.n);         // the dense peer's one expert
    ggml_tensor* x1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, p.k, slots);  // all slots' rows
    // mul_mat_id: per slot [n, top_k, T]
    ggml_tensor* y = ggml_mul_mat_id(ctx, as, b, ids);
    ggml_cgraph* g_id = ggml_new_graph(ctx);
    ggml_build_forward_expand(g_id, y);
    // + combine (ids presets): weighted by the router, summed over the slots as llama.cpp's build_moe_ffn
    ggml_cgraph* g_comb = nullptr;
    if (p.top_k > 1) {
      ggml_tensor* y2 = ggml_mul(ctx, ggml_mul_mat_id(ctx, as, b, ids), rw);
      ggml_tensor* sum = ggml_view_2d(ctx, y2, p.n, p.T, y2->nb[2], 0);
      for (int64_t j = 1; j < p.top_k; ++j)
        sum = ggml_add(ctx, sum, ggml_view_2d(ctx, y2, p.n, p.T, y2->nb[2], size_t(j) * y2->nb[1]));
      g_comb = ggml_new_graph(ctx);
      ggml_build_forward_expand(g_comb, sum);
    }
    // dense: every slot's row through one expert, [n, slots]
    ggml_tensor* yd = ggml_mul_mat(ctx, w1, x1);
    ggml_cgraph* g_dense = ggml_new_graph(ctx);
    ggml_build_forward_expand(g_dense, yd);

    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    const char* tname = ggml_type_name(type);
    if (!buf) {
      std::printf("{\"peer\":\"ggml-vulkan\",\"workload\":\"%s\",\"weights\":\"%s\",\"error\":\"allocation failed\"}\n",
                  p.name.c_str(), tname);
      std::fflush(stdout);
      ggml_free(ctx);
      ggml_backend_free(backend);
      continue;
    }
    // Inputs: one random expert, quantized once, copied to every expert (only the selected ones are read).
    std::vector<float> expert(size_t(p.k * p.n)), act(size_t(p.k * std::max(p.T, slots)));
    fill(expert, 1), fill(act, 2);
    const size_t expert_bytes = ggml_row_size(type, p.k) * size_t(p.n);
    std::vector<uint8_t> packed(expert_bytes);
    if (type == GGML_TYPE_F32) std::memcpy(packed.data(), expert.data(), expert_bytes);
    else ggml_quantize_chunk(type, expert.data(), packed.data(), 0, p.n, p.k, nullptr);
    for (int64_t e = 0; e < p.E; ++e) ggml_backend_tensor_set(as, packed.data(), size_t(e) * expert_bytes, expert_bytes);
    ggml_backend_tensor_set(w1, packed.data(), 0, expert_bytes);
    ggml_backend_tensor_set(b, act.data(), 0, ggml_nbytes(b));
    ggml_backend_tensor_set(x1, act.data(), 0, ggml_nbytes(x1));
    ggml_backend_tensor_set(ids, p.ids.data(), 0, ggml_nbytes(ids));
    ggml_backend_tensor_set(rw, p.weights.data(), 0, ggml_nbytes(rw));

    const double flops = 2.0 * double(slots) * double(p.k) * double(p.n);
    struct Run { const char* op; ggml_cgraph* g; ggml_tensor* node; double bytes; };
    const double act_bytes = 4.0 * double(p.T) * double(p.k);
    const Run runs[] = {
        {"mul_mat_id", g_id, y, double(distinct) * expert_bytes + act_bytes + 4.0 * slots * p.n},
        {"mul_mat_id+combine", g_comb, nullptr, double(distinct) * expert_bytes + act_bytes + 4.0 * p.T * p.n},
        {"mul_mat", g_dense, yd, double(expert_bytes) + 4.0 * slots * p.k + 4.0 * slots * p.n},
    };
    for (const Run& r : runs) {
      if (!r.g) continue;
      std::fprintf(stderr, "ggml peer: %s %s %s\n", p.name.c_str(), r.op, tname);
      bool ok = true;
      for (int i = 0; i < ggml_graph_n_nodes(r.g); ++i) ok = ok && ggml_backend_supports_op(backend, ggml_graph_node(r.g, i));
      std::printf("{\"peer\":\"ggml-vulkan\",\"workload\":\"%s\",\"op\":\"%s\",\"weights\":\"%s\",\"device\":\"%s\","
                  "\"T\":%lld,\"top_k\":%lld,\"experts\":%lld,\"k\":%lld,\"n\":%lld,\"slots\":%lld,\"distinct_experts\":%lld,"
                  "\"quick\":%s,\"timing\":\"wall\",",
                  p.name.c_str(), r.op, tname, device.c_str(), (long long)p.T, (long long)p.top_k, (long long)p.E,
                  (long long)p.k, (long long)p.n, (long long)slots, (long long)distinct, quick ? "true" : "false");
      if (!ok) {
        std::printf("\"error\":\"not supported by the backend\"}\n");
      } else {
        const Timing t = time_graph(backend, r.g, evict, warmup, reps);
        if (t.reps == 0) std::printf("\"error\":\"ggml_backend_graph_compute failed\"}\n");
        else std::printf("\"reps\":%d,\"median_ms\":%.6f,\"min_ms\":%.6f,\"gflops\":%.3f,\"gbps\":%.3f,\"group_sizes\":%s}\n",
                    t.reps, t.median, t.min, flops / t.median * 1e-6, r.bytes / t.median * 1e-6,
                    json_sizes(p.sizes).c_str());
      }
      std::fflush(stdout);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    std::fprintf(stderr, "ggml peer: %s %s done\n", p.name.c_str(), tname);
    ggml_backend_free(backend);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, list = false;
  int warmup = 3, reps = 0;
  long evict_mib = -1;
  std::vector<std::string> presets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--quick") quick = true;
    else if (a == "--list") list = true;
    else if (a == "--preset" && more) presets.push_back(argv[++i]);
    else if (a == "--reps" && more) reps = std::atoi(argv[++i]);
    else if (a == "--warmup" && more) warmup = std::atoi(argv[++i]);
    else if (a == "--evict-mib" && more) evict_mib = std::atol(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--list] [--preset NAME]... [--reps N] [--warmup N] [--evict-mib N]\n"
                           "presets: moe-prefill moe-fine decode ids-decode qwen3-ids-t1 -t8 -t64 -t512 (default: all)\n",
                   argv[0]);
      return 2;
    }
  }
  if (presets.empty()) presets = kDefaultPresets;
  if (quick && reps == 0) reps = 3;
  if (evict_mib < 0) evict_mib = quick ? 16 : 256;

  // The Vulkan backend is a module beside this program (GGML_BACKEND_DL): load it by path.
  std::string dir = argv[0];
  dir = dir.find('/') == std::string::npos ? "." : dir.substr(0, dir.rfind('/'));
  ggml_backend_reg_t reg = ggml_backend_load((dir + "/libggml-vulkan.so").c_str());
  if (!reg) {
    std::fprintf(stderr, "ggml peer: could not load %s/libggml-vulkan.so (is libvulkan.so.1 on LD_LIBRARY_PATH?)\n", dir.c_str());
    return 1;
  }
  const size_t count = ggml_backend_reg_dev_count(reg);
  for (size_t i = 0; i < count; ++i) {
    ggml_backend_dev_t d = ggml_backend_reg_dev_get(reg, i);
    size_t free_b = 0, total_b = 0;
    ggml_backend_dev_memory(d, &free_b, &total_b);
    std::fprintf(stderr, "ggml peer: device %zu: %s (%s), %.1f GiB\n", i, ggml_backend_dev_name(d),
                 ggml_backend_dev_description(d), double(total_b) / (1u << 30));
  }
  if (count == 0) {
    std::fprintf(stderr, "ggml peer: ggml's Vulkan backend shows no device (a CPU device such as lavapipe needs "
                         "GGML_VK_VISIBLE_DEVICES=0)\n");
    return list ? 0 : 1;
  }
  if (list) return 0;
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
  const std::string device = ggml_backend_dev_description(dev);
  const Eviction evict(dev, size_t(evict_mib) << 20);
  std::printf("{\"peer\":\"ggml-vulkan\",\"device\":\"%s\",\"ggml\":\"0.25.1 (npm @node-llama-cpp/linux-x64-vulkan 3.22.1)\","
              "\"evict_bytes\":%lld,\"warmup\":%d,\"quick\":%s}\n",
              device.c_str(), (long long)(evict_mib << 20), warmup, quick ? "true" : "false");
  std::fflush(stdout);
  for (const std::string& name : presets) {
    Preset p;
    if (!make_preset(name, quick, p)) {
      std::fprintf(stderr, "ggml peer: unknown preset %s\n", name.c_str());
      continue;
    }
    run_preset(dev, p, quick, warmup, reps, evict);
  }
  return 0;
}
