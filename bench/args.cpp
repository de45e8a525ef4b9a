#include "args.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <set>

#include "flags.hpp"
#include "tuning.hpp"

namespace bench {

const char kBenchUsage[] =
    "usage: vkgmm bench [--preset NAME]... [--presets default|ids|quant|all] [custom workload] [--dtype f32|f16|bf16]\n"
    "                   [--model NAME|all]... [--scale S] [--tokens T,T,...] [--train]\n"
    "                   [--rhs-format FMT|UP,DOWN]\n"
    "                   [--tiling TM,TK,TN|auto] [--metadata host|device|both] [--reps N] [--warmup N]\n"
    "                   [--device-grid auto|indirect|bound|both] [--grid auto|per_visit|persistent|both]\n"
    "                   [--json] [--sweep-tiling]\n"
    "\n"
    "Checks each workload against the CPU reference (a wrong result is refused, exit 1, never timed), then\n"
    "times it: device time from timestamp queries, wall and host time per call, GFLOP/s, GB/s, percent of\n"
    "the device's FMA ceiling, and ratios to a one-dispatch-per-group loop and to OpenBLAS (when built in).\n"
    "With no workload options every preset runs.\n"
    "\n"
    "presets (--preset NAME, repeatable):\n"
    "  moe-prefill  gmm, G=8, m=4096, k=1024, n=1024, random routing\n"
    "  moe-fine     gmm, G=64, m=4096, k=512, n=512, zipf routing with 8 empty experts\n"
    "  decode       gmm, G=8, m=16, k=1024, n=1024, random routing\n"
    "  moe-grad     the backward of moe-prefill (d_lhs by gmm, d_rhs by tgmm)\n"
    "  qwen3-ids-t1, qwen3-ids-t8, qwen3-ids-t64, qwen3-ids-t512\n"
    "               gmm routed by expert ids (Qwen3-30B-A3B's experts: E=128, top-8, k=2048, n=768) at\n"
    "               T = 1, 8, 64, 512 tokens, seeded top-k router, output combined with the router weights;\n"
    "               also timed per slot (no combine) and against the unfused chain (permute + gmm with\n"
    "               device group sizes + un-permute/combine), alternately. Not in a default run.\n"
    "  ids-decode   decode routed by ids: T=8 tokens, top-2 of E=8 experts, k=n=1024 (f32)\n"
    "  moe-grad-ids the backward of a gmm routed by ids at moe-prefill's scale: T=2048 tokens, top-2 of\n"
    "               E=8 experts (4096 slots), k=n=1024, output combined with the router weights\n"
    "               (GmmBackwardPlan: d_lhs, d_rhs, d_weights), checked on sampled tokens and experts,\n"
    "               timed alternately with the routed forward and the sorted path's backward (the slots\n"
    "               in expert order on the host, as moe-grad runs). In --presets ids\n"
    "  FMT-ids-decode, FMT-prefill\n"
    "               expert weights in GGUF block format FMT ({formats}; rhs [G, n, k],\n"
    "               blocks along k): ids-decode with f32 activations, moe-prefill's shape with bf16\n"
    "               activations and out; bf16-prefill is moe-prefill with every operand bf16 (their peer)\n"
    "\n"
    "model presets (--model NAME, repeatable, or all): one MoE layer's expert matmuls at the model's shapes\n"
    "(config.json; bench/README.md cites each), routed by ids from a seeded router: gate/up ([gate | up],\n"
    "the model's gated activation fused, per slot) then down (the slots' results combined in token order),\n"
    "one command buffer, each projection checked against the reference first; weights as the model ships\n"
    "them (--rhs-format FMT for a GGUF block format instead, --rhs-format UP,DOWN for one per projection, as\n"
    "quantized files mix them: q4_K,q6_K), activations bf16 (--dtype to change); FMT one of {formats}:\n"
    "  mixtral-8x7b      E=8,   top-2, hidden 4096 -> expert 14336, bf16\n"
    "  qwen3-30b-a3b     E=128, top-8, hidden 2048 -> expert 768,   bf16\n"
    "  deepseek-v2-lite  E=64,  top-6, hidden 2048 -> expert 1408,  bf16 (routed experts only)\n"
    "  gpt-oss-20b       E=32,  top-4, hidden 2880 -> expert 2880,  mxfp4 weights, per-expert bias\n"
    "  --scale S        hidden and expert sizes divided by S, each rounded to a multiple of 32 (of 256 with\n"
    "                   q4_K / q6_K weights); experts, top-k and tokens unchanged; printed in the table and\n"
    "                   JSON. Default 8 (all four models: 2.5-4.3 min on a loaded 2-core lavapipe);\n"
    "                   1: the published sizes\n"
    "  --tokens LIST    tokens per layer call (default 1,8,512,4096: decode and prefill)\n"
    "  --train          also each layer's training step through vkgmm::MoeLayerPlan (router, top-k, both\n"
    "                   projections): the forward alone, the backward alone (reading the forward's saved\n"
    "                   words) and both in one command buffer, timed alternately; y and d_x checked on a\n"
    "                   sample of tokens against the CPU reference, every gradient finite. A layer whose\n"
    "                   shapes the library refuses (a gradient past one storage binding) is reported skipped\n"
    "\n"
    "  --presets G  a group: default (the four above, what a run with no workload runs), ids (ids-decode,\n"
    "               the qwen3-ids-* presets and moe-grad-ids, ~2 min f32 on lavapipe plus the references),\n"
    "               quant (ids-decode and FMT-ids-decode for every block format, bf16-, q8_0-, q4_K-prefill:\n"
    "               the block formats beside their float peers in one run, reported after the tables), all\n"
    "               (every group)\n"
    "\n"
    "custom workload (any of these adds one, named 'custom'; unset ones take the values shown):\n"
    "  --op gmm|tgmm|backward  (gmm)      --m M (1024)  --k K (512)  --n N (512)  --groups G (8)\n"
    "  --dist uniform|random|zipf (random) --empty-groups E (0): E experts get no rows\n"
    "  --top-k K        route by expert ids as the qwen3-ids presets: --m tokens, --groups experts, K\n"
    "                   distinct experts per token from the seeded router (--dist, --empty-groups unused);\n"
    "                   with --op backward, its backward as moe-grad-ids runs it\n"
    "\n"
    "for every workload:\n"
    "  --dtype T        element type of every operand (f32; a preset's own otherwise)\n"
    "  --rhs-format F   expert weights (rhs) in GGUF block format F: one of {formats} (gmm\n"
    "                   only; k a multiple of the block, 32 or 256 for the K formats). rhs is then [G, n, k]\n"
    "                   (transpose_rhs, as GGUF stores experts): random floats quantized and uploaded as\n"
    "                   raw blocks, checked against the reference on their dequantized values; lhs and out\n"
    "                   keep --dtype. Bytes (GB/s, %copy) count the blocks' storage bytes\n"
    "  --tiling T       TM,TK,TN for every plan; 'auto': what --sweep-tiling cached for this device and\n"
    "                   shape, else the library's choice (default: the library's choice)\n"
    "  --metadata M     where the group sizes live: host (the plan builds the group metadata), device\n"
    "                   (uploaded once to a device buffer; every call builds the metadata on the GPU, with\n"
    "                   the host path's tiling), or both (default): each timed alternately, and the\n"
    "                   device path's gpu ms and its ratio to the host path's reported\n"
    "  --device-grid G  the device path's gmm grid: auto (the library's, default), indirect\n"
    "                   (vkCmdDispatchIndirect), bound (the upper-bound grid), or both: the device path\n"
    "                   timed on each alternately, each with a workspace of the bench's own (lent as an\n"
    "                   indirect buffer, and not: the library then takes the upper-bound grid), dev ms being\n"
    "                   the indirect grid's and ind/bnd its gpu ms over the upper-bound grid's\n"
    "  --grid G         how the ops' workgroups take their work items: auto (the library's, default),\n"
    "                   per_visit (one workgroup per visit and n tile), persistent (about one workgroup per\n"
    "                   compute unit, each looping over them), or both: every timed path per visit and\n"
    "                   persistent, alternately, pers/pv being the persistent grid's gpu ms over the\n"
    "                   per-visit grid's (host path; dev pers/pv the device path's)\n"
    "  --reps N         timed calls per measurement (default: at least 5 and ~0.25 s of device time,\n"
    "                   at most 100 and what fits in ~2 s with the cache eviction before each call;\n"
    "                   --sweep-tiling times each tiling so)\n"
    "  --warmup N       untimed calls before them (1)\n"
    "  --seed S         seed of the routing and the inputs (1)\n"
    "  --expert-shards N  routed workloads: split the experts into N windows, one call each (accumulating\n"
    "                   through existing_out), also in the chain; default: as few as vkgmm reads whole\n"
    "                   (Context::max_whole_input_bytes: on lavapipe one, through texel views)\n"
    "  --json           one JSON object on stdout instead of the table\n"
    "  --sweep-tiling   time every tiling that fits the device per workload, print the best, and cache it\n"
    "                   for --tiling auto ($XDG_CACHE_HOME/vkgmm, else ~/.cache/vkgmm)\n"
    "\n"
    "Progress goes to stderr. $VKGMM_BENCH_PERTURB=1 changes one output element before the check (a test\n"
    "that the bench refuses wrong results; =train: in --train's check alone).\n";

const char* grid_run_name(GridRun g) {
  switch (g) {
    case GridRun::automatic: return "auto";
    case GridRun::indirect: return "indirect";
    case GridRun::bound: return "bound";
    case GridRun::both: return "both";
  }
  return "?";
}

const char* workgroup_grid_name(WorkgroupGrid g) {
  switch (g) {
    case WorkgroupGrid::automatic: return "auto";
    case WorkgroupGrid::per_visit: return "per_visit";
    case WorkgroupGrid::persistent: return "persistent";
    case WorkgroupGrid::both: return "both";
  }
  return "?";
}

const char* metadata_name(Metadata m) {
  switch (m) {
    case Metadata::host: return "host";
    case Metadata::device: return "device";
    case Metadata::both: return "both";
  }
  return "?";
}

int parse_args(int argc, char** argv, Options& opts, std::string& error) {
  if (tool::wants_help(argc, argv)) {
    std::fputs(tool::with_block_formats(kBenchUsage).c_str(), stdout);
    return 1;
  }
  std::vector<std::string> presets;
  Workload custom;
  custom.name = "custom";
  custom.m = 1024, custom.k = 512, custom.n = 512, custom.groups = 8;
  bool has_custom = false, two_formats = false;
  std::optional<vkgmm::DType> dtype, rhs_format, down_format;
  long long seed = 1;
  std::vector<const ModelSpec*> models;
  std::vector<int64_t> tokens = default_model_tokens();
  std::set<std::string> given;  // the switches and the options that take one value

  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // A switch given twice is a mistake in the command line (a doubled paste), refused as an option is.
    if ((a == "--json" || a == "--sweep-tiling" || a == "--train") && !given.insert(a).second) {
      error = a + " given twice";
      return 2;
    }
    if (a == "--json") {
      opts.json = true;
      continue;
    }
    if (a == "--sweep-tiling") {
      opts.sweep = true;
      continue;
    }
    if (a == "--train") {
      opts.train = true;
      continue;
    }
    const bool takes_value = a == "--model" || a == "--scale" || a == "--tokens" || a == "--preset" || a == "--presets" || a == "--top-k" || a == "--expert-shards" || a == "--m" || a == "--k" || a == "--n" || a == "--groups" ||
                             a == "--dist" || a == "--empty-groups" || a == "--op" || a == "--dtype" || a == "--rhs-format" ||
                             a == "--tiling" || a == "--metadata" || a == "--device-grid" || a == "--grid" || a == "--reps" || a == "--warmup" || a == "--seed";
    if (!takes_value) {
      error = "unknown argument '" + a + "' (see vkgmm bench --help)";
      return 2;
    }
    if (i + 1 >= argc) {
      error = a + " needs a value";
      return 2;
    }
    // --preset and --model add one each; any other option given twice would keep its last value unseen.
    if (a != "--preset" && a != "--model" && !given.insert(a).second) {
      error = a + " given twice";
      return 2;
    }
    const std::string v = argv[++i];
    std::optional<int64_t> x;
    auto bad = [&](const std::string& rule) {
      error = a + " " + v + ": " + rule;
      return 2;
    };
    if (a == "--preset") {
      Workload w;
      if (!make_preset(v, w))
        return bad(tool::with_block_formats(
            "unknown preset (moe-prefill, moe-fine, decode, moe-grad, ids-decode, qwen3-ids-t1, -t8, -t64, -t512, "
            "moe-grad-ids, FMT-ids-decode, FMT-prefill with FMT one of {formats}, bf16-prefill)"));
      if (std::find(presets.begin(), presets.end(), v) == presets.end()) presets.push_back(v);
    } else if (a == "--presets") {
      std::vector<std::string> group;
      if (v == "default" || v == "all") group = preset_names();
      if (v == "ids" || v == "all")
        group.insert(group.end(), ids_preset_names().begin(), ids_preset_names().end());
      if (v == "quant" || v == "all")
        group.insert(group.end(), quant_preset_names().begin(), quant_preset_names().end());
      if (group.empty()) return bad("must be default, ids, quant or all");
      for (const std::string& name : group)
        if (std::find(presets.begin(), presets.end(), name) == presets.end()) presets.push_back(name);
    } else if (a == "--model") {
      if (v == "all") {
        for (const ModelSpec& m : model_specs()) models.push_back(&m);
      } else if (const ModelSpec* m = find_model(v)) {
        models.push_back(m);
      } else {
        std::string names;
        for (const ModelSpec& m : model_specs()) names += std::string(names.empty() ? "" : ", ") + m.name;
        return bad("unknown model (" + names + ", or all)");
      }
    } else if (a == "--scale") {
      if (!(x = tool::parse_int(v, 1, 1024))) return bad("must be an integer in [1, 1024]");
      opts.scale = *x;
    } else if (a == "--tokens") {
      tokens.clear();
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        if (!(x = tool::parse_int(v.substr(at, comma - at), 1, 1 << 20)))
          return bad("must be a comma-separated list of token counts in [1, 2^20]");
        tokens.push_back(*x);
        at = comma + 1;
      }
    } else if (a == "--expert-shards") {
      if (!(x = tool::parse_int(v, 1, 1 << 20))) return bad("must be a positive integer");
      opts.expert_shards = *x;
    } else if (a == "--top-k") {
      if (!(x = tool::parse_int(v, 1, 1024))) return bad("must be an integer in [1, 1024]");
      custom.top_k = *x;
      has_custom = true;
    } else if (a == "--groups") {
      if (!(x = tool::parse_int(v, 1, 65535))) return bad("must be an integer in [1, 65535] (the most groups vkgmm takes)");
      custom.groups = *x;
      has_custom = true;
    } else if (a == "--m" || a == "--k" || a == "--n") {
      if (!(x = tool::parse_int(v, 1, INT32_MAX))) return bad("must be an integer in [1, 2^31)");
      (a == "--m" ? custom.m : a == "--k" ? custom.k : custom.n) = *x;
      has_custom = true;
    } else if (a == "--empty-groups") {
      if (!(x = tool::parse_int(v, 0, INT32_MAX))) return bad("must be an integer >= 0");
      custom.empty_groups = *x;
      has_custom = true;
    } else if (a == "--dist") {
      if (!parse_dist(v, custom.dist)) return bad("must be uniform, random or zipf");
      has_custom = true;
    } else if (a == "--op") {
      if (!parse_op(v, custom.op)) return bad("must be gmm, tgmm or backward");
      has_custom = true;
    } else if (a == "--dtype") {
      dtype = vkgmm::parse_dtype(v);
      if (!dtype || vkgmm::is_quantized(*dtype)) return bad("must be f32, f16 or bf16 (block formats: --rhs-format)");
    } else if (a == "--rhs-format") {
      // FMT, or UP,DOWN: a model layer's projections each in its own.
      const size_t comma = v.find(',');
      rhs_format = vkgmm::parse_dtype(v.substr(0, comma));
      down_format = comma == std::string::npos ? rhs_format : vkgmm::parse_dtype(v.substr(comma + 1));
      for (const auto& f : {rhs_format, down_format})
        if (!f || !vkgmm::is_quantized(*f))
          return bad(tool::with_block_formats("must be one of {formats}, or two of them (UP,DOWN) for model presets"));
      if (comma != std::string::npos) two_formats = true;
    } else if (a == "--tiling") {
      if (v == "auto") {
        opts.tiling_mode = TilingMode::cached;
      } else if (auto t = parse_tiling(v)) {
        opts.tiling_mode = TilingMode::fixed;
        opts.tiling = *t;
      } else {
        return bad("must be TM,TK,TN (positive integers) or auto");
      }
    } else if (a == "--metadata") {
      if (v == "host") opts.metadata = Metadata::host;
      else if (v == "device") opts.metadata = Metadata::device;
      else if (v == "both") opts.metadata = Metadata::both;
      else return bad("must be host, device or both");
    } else if (a == "--device-grid") {
      if (v == "auto") opts.grid = GridRun::automatic;
      else if (v == "indirect") opts.grid = GridRun::indirect;
      else if (v == "bound") opts.grid = GridRun::bound;
      else if (v == "both") opts.grid = GridRun::both;
      else return bad("must be auto, indirect, bound or both");
    } else if (a == "--grid") {
      if (v == "auto") opts.workgroups = WorkgroupGrid::automatic;
      else if (v == "per_visit") opts.workgroups = WorkgroupGrid::per_visit;
      else if (v == "persistent") opts.workgroups = WorkgroupGrid::persistent;
      else if (v == "both") opts.workgroups = WorkgroupGrid::both;
      else return bad("must be auto, per_visit, persistent or both");
    } else if (a == "--reps") {
      if (!(x = tool::parse_int(v, 1, 100000))) return bad("must be an integer in [1, 100000]");
      opts.reps = int(*x);
      opts.reps_given = true;
    } else if (a == "--warmup") {
      if (!(x = tool::parse_int(v, 0, 100000))) return bad("must be an integer in [0, 100000]");
      opts.warmup = int(*x);
    } else if (a == "--seed") {
      if (!(x = tool::parse_int(v, 0, UINT32_MAX))) return bad("must be an integer in [0, 2^32)");
      seed = *x;
    }
  }
  if (has_custom && custom.routed() && (custom.op == Op::tgmm || custom.top_k > custom.groups)) {
    error = "--top-k " + std::to_string(custom.top_k) + ": ids routing is gmm or its backward, with top_k <= --groups " +
            std::to_string(custom.groups) + " (distinct experts per token)";
    return 2;
  }
  if (has_custom && custom.empty_groups >= custom.groups) {
    error = "--empty-groups " + std::to_string(custom.empty_groups) + " must be less than --groups " +
            std::to_string(custom.groups) + " (some group must receive the rows)";
    return 2;
  }
  if (opts.sweep && opts.tiling_mode != TilingMode::library) {
    error = "--sweep-tiling tries the tilings itself: drop --tiling";
    return 2;
  }
  if (opts.sweep && opts.metadata == Metadata::device) {
    error = "--sweep-tiling times the host path's tilings: drop --metadata device";
    return 2;
  }
  if (opts.grid == GridRun::both && opts.metadata == Metadata::host) {
    error = "--device-grid both times the device path: drop --metadata host";
    return 2;
  }
  if (opts.workgroups == WorkgroupGrid::both && (opts.grid == GridRun::both || opts.sweep)) {
    error = "--grid both times each path on both grids: drop --device-grid both and --sweep-tiling";
    return 2;
  }

  if (models.empty() && (tokens != default_model_tokens() || opts.scale != kDefaultModelScale || opts.train)) {
    error = "--scale, --tokens and --train apply to model presets: add --model NAME";
    return 2;
  }
  if (two_formats && (models.empty() || !presets.empty() || has_custom)) {
    error = "--rhs-format UP,DOWN applies to model presets alone (their two projections): give one format";
    return 2;
  }
  if (opts.sweep && !models.empty()) {
    error = "--sweep-tiling does not sweep model layers (routed by ids): give --tiling instead";
    return 2;
  }
  for (const ModelSpec* m : models) {
    if (std::find_if(opts.layers.begin(), opts.layers.end(), [&](const ModelLayer& l) { return l.model == m; }) !=
        opts.layers.end())
      continue;  // named twice
    for (const int64_t t : tokens) {
      ModelLayer layer;
      const std::string why = make_model_layer(*m, opts.scale, t, dtype.value_or(m->activations),
                                               rhs_format ? rhs_format : m->weights, down_format, uint32_t(seed),
                                               layer);
      if (!why.empty()) {
        error = "--model " + why + " (--scale " + std::to_string(opts.scale) + ")";
        return 2;
      }
      opts.layers.push_back(layer);
    }
  }
  if (presets.empty() && !has_custom && models.empty()) presets = preset_names();
  for (const std::string& name : presets) {
    Workload w;
    make_preset(name, w);
    opts.workloads.push_back(w);
  }
  if (has_custom) opts.workloads.push_back(custom);
  for (Workload& w : opts.workloads) {
    if (dtype) w.dtype = *dtype;
    if (rhs_format) w.rhs_format = *rhs_format;
    if (w.quantized()) {
      const int64_t block = int64_t(vkgmm::block_elements(*w.rhs_format));
      const std::string what = "'" + w.name + "' with weights in " + vkgmm::dtype_name(*w.rhs_format);
      if (w.op != Op::gmm) {
        error = what + ": block-format weights are gmm's rhs only (" + op_name(w.op) + " workload)";
        return 2;
      }
      if (w.k % block) {
        error = what + ": k = " + std::to_string(w.k) + " must be a multiple of the block's " + std::to_string(block) +
                " values";
        return 2;
      }
    }
    w.seed = static_cast<uint32_t>(seed);
    if (w.routed()) make_routing(w);
    else w.group_sizes = make_group_sizes(w.m, w.groups, w.dist, w.empty_groups, w.seed);
    if (opts.sweep && w.routed()) {
      error = "--sweep-tiling does not sweep workloads routed by ids ('" + w.name + "'): give --tiling instead";
      return 2;
    }
  }
  return 0;
}

}  // namespace bench
