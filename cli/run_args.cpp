#include "run_args.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "flags.hpp"
#include "run_operands.hpp"
#include "run_output.hpp"
#include "tiling_text.hpp"
#include "usage_error.hpp"

const char kRunUsage[] =
    "usage:\n"
    "  vkgmm run gmm  --lhs L.npy --rhs R.npy --group-sizes GS.npy --out OUT.npy\n"
    "                 [--transpose-rhs] [--group-offset N] [--existing-out E.npy]\n"
    "                 [--bias B.npy] [--activation A]\n"
    "                 [--out-dtype f32|f16|bf16] [--input-dtype bf16] [--tiling TM,TK,TN] [--check]\n"
    "                 [--device-metadata]\n"
    "  vkgmm run gmm  --lhs X.npy --ids IDS.npy --rhs R.npy --out OUT.npy [--weights W.npy]\n"
    "                 [--group-offset N] [--num-experts E] [--transpose-rhs] [--bias B.npy]\n"
    "                 [--activation A] [--existing-out E.npy] [--out-dtype f32|f16|bf16]\n"
    "                 [--input-dtype bf16] [--tiling TM,TK,TN] [--check]\n"
    "  vkgmm run gmm  ... --rhs-format F   (F a block format, below; rhs: |u1 [G_local, n, (k/B)*S])\n"
    "  vkgmm run gmm  ... --rhs FILE.gguf:TENSOR                   (GGUF v3; the type from the file)\n"
    "  vkgmm run tgmm --lhs L.npy --rhs R.npy --group-sizes GS.npy --out OUT.npy\n"
    "                 [--group-offset N] [--num-actual-groups N] [--existing-out E.npy]\n"
    "                 [--out-dtype f32|f16|bf16] [--input-dtype bf16] [--tiling TM,TK,TN] [--check]\n"
    "                 [--device-metadata]\n"
    "\n"
    "gmm:  lhs [m, k], rhs [G_local, k, n] ([G_local, n, k] with --transpose-rhs), out [m, n_out].\n"
    "      rhs holds the active groups group_offset .. group_offset + G_local; other rows get\n"
    "      existing_out (or 0).\n"
    "gmm --ids (routing by expert ids, instead of --group-sizes): ids [T, top_k] (<i4 or <i8), each an\n"
    "      expert or -1 (none); lhs [T, k] (shared by a token's slots) or [T, top_k, k] (one row per\n"
    "      slot); rhs holds experts group_offset .. group_offset + E_local. Without --weights out is\n"
    "      per slot, [T, top_k, n_out]; with --weights W [T, top_k] (<f4) it is combined, [T, n_out]:\n"
    "      the sum over the token's local slots of W * result, + existing_out. Slots whose expert is\n"
    "      outside the window get existing_out (or 0). --num-experts E: ids >= E are an error; ids\n"
    "      below -1 always are.\n"
    "Epilogue (gmm, with --group-sizes or --ids): --bias B [G_local, n] (<f4) is added to each\n"
    "      product row of its group; --activation A (swiglu, swiglu_oai: gpt-oss's clamped one, or\n"
    "      geglu) takes the product's n columns as [gate | up] (n even) and gives n_out = n / 2:\n"
    "      silu(gate) * up, or as include/vkgmm/ops.hpp says. none (the default): n_out = n.\n"
    "Quantized rhs (gmm): GGUF's blocks byte for byte, B values along k in S bytes per block (F B/S):\n"
    "      {sizes}; the transposed layout is implied. --rhs-format F reads the rhs .npy as |u1 raw blocks\n"
    "      [G_local, n, (k/B)*S]. --rhs FILE.gguf:TENSOR (split after the first '.gguf:', so TENSOR\n"
    "      may hold ':') reads a GGUF v3 tensor of GGUF dims [k, n, E] (memory [E, n, k]; G_local = E)\n"
    "      or [k, n] (E = 1), of type F32, F16, BF16 or a block format above, uploaded as it is (a\n"
    "      float tensor is a transposed rhs); --rhs-format, if given, must match its type. --check\n"
    "      dequantizes the weights on the CPU for its reference.\n"
    "tgmm: lhs [k, m], rhs [m, n], out [num_actual_groups, k, n] (+ existing_out).\n"
    "\n"
    "Inputs are .npy files (format 1.0-3.0, little-endian, C order): <f4 (f32) or <f2 (f16);\n"
    "--input-dtype bf16 rounds f32 lhs and rhs to bf16 (never bias, weights or existing_out); <f2\n"
    "files stay f16, and with neither lhs nor rhs f32 it is refused (it would round nothing).\n"
    "group sizes: <i4 or <i8, all G groups. existing_out: <f4 or <f2, the output's shape, converted\n"
    "to the output type. The output is <f4 for f32 and bf16 (widened exactly) and <f2 for f16; the\n"
    "default output type is f32.\n"
    "--check compares with the CPU reference and fails (status 1) outside atol + rtol * |expected|:\n"
    "atol 1e-3, widened by sqrt(K / 128) past sums of K = 128 terms (K: k for gmm, the largest\n"
    "group's rows for tgmm) and by the largest |lhs| * |rhs| (times a token's sum of |weights|) when\n"
    "above 1; rtol 1e-5, or 1e-2 when lhs, rhs or the output is f16 or bf16 (block-format weights\n"
    "decode to exact f32 values: they count as f32). $VKGMM_RUN_PERTURB=1 adds one term's worth to one\n"
    "output element first (a test that --check refuses a wrong result).\n"
    "--device-metadata uploads the group sizes to a device buffer and runs the library's device path\n"
    "(group metadata built on the GPU), with the tiling the host path picks for these sizes (or\n"
    "--tiling): the output file is the same, bit for bit. The sizes are still checked on the host first.\n"
    "Ids always go to the device (no --device-metadata with --ids); they are checked on the host first.\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments or input, 1 runtime or device error. On error: one line on\n"
    "stderr and no output file.\n";

const std::string* Args::get(const std::string& flag) const {
  auto it = values.find(flag);
  return it == values.end() ? nullptr : &it->second;
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (tool::wants_help(argc, argv)) {
    a.help = true;
    return a;
  }
  std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (words.empty()) throw UsageError("missing operation: expected 'gmm' or 'tgmm' (see vkgmm run --help)");
  a.op = words[0];
  if (a.op != "gmm" && a.op != "tgmm")
    throw UsageError("unknown operation '" + a.op + "': expected 'gmm' or 'tgmm'");

  // gmm's routing and epilogue flags are known to tgmm too, so that prepare() can say they are gmm only.
  std::vector<std::string> valued = {"lhs",         "rhs",    "group-sizes", "out",     "group-offset",
                                     "existing-out", "out-dtype", "input-dtype", "tiling", "ids",
                                     "weights",     "num-experts", "bias",     "activation", "rhs-format"};
  if (a.op == "tgmm") valued.push_back("num-actual-groups");
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + w + "'");
    std::string name = w.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (name == "check" || name == "device-metadata" || (name == "transpose-rhs" && a.op == "gmm")) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      bool& flag = name == "check" ? a.check : name == "device-metadata" ? a.device_metadata : a.transpose_rhs;
      if (flag) throw UsageError("--" + name + " given twice");
      flag = true;
      continue;
    }
    if (std::find(valued.begin(), valued.end(), name) == valued.end())
      throw UsageError("unknown option '--" + name + "' for " + a.op);
    if (!inline_value) {
      if (i + 1 >= words.size()) throw UsageError("--" + name + " needs a value");
      value = words[++i];
    }
    if (value.empty()) throw UsageError("--" + name + " needs a non-empty value");
    if (!a.values.emplace(name, value).second) throw UsageError("--" + name + " given twice");
  }
  for (const char* required : {"lhs", "rhs", "out"})
    if (!a.get(required)) throw UsageError(std::string("missing required option --") + required);
  return a;  // --group-sizes (or gmm's --ids): prepare()
}

int64_t optional_count(const Args& a, const std::string& flag, int64_t fallback) {
  const std::string* v = a.get(flag);
  if (!v) return fallback;
  // Group indices are int32 (as are group sizes and expert ids): a larger count can name no group, and
  // the library would refuse it as a size it does not run (status 1) rather than as a bad argument.
  const std::optional<int64_t> count = tool::parse_int(*v, 0, std::numeric_limits<int32_t>::max());
  if (!count)
    throw UsageError("--" + flag + ": expected an integer from 0 to " +
                     std::to_string(std::numeric_limits<int32_t>::max()) + ", got '" + *v + "'");
  return *count;
}

namespace {

// The flags of routing by expert ids and of the epilogue (docs/contract.md, "The command line"), resolved
// into `j`; the combinations the contract refuses are refused here, naming the flag.
void routing_and_epilogue(Job& j) {
  const Args& a = j.args;
  if (a.op == "tgmm") {  // routing and epilogues are gmm's alone
    for (const char* flag : {"ids", "weights", "num-experts"})
      if (a.get(flag)) throw UsageError(std::string("--") + flag + ": routing by expert ids is gmm only, not tgmm");
    for (const char* flag : {"bias", "activation"})
      if (a.get(flag)) throw UsageError(std::string("--") + flag + ": epilogues are gmm only, not tgmm");
    if (a.get("rhs-format")) throw UsageError("--rhs-format: quantized weights are gmm's rhs only, not tgmm's");
    bool gguf = false;
    try {
      gguf = gguf_reference(*a.get("rhs")).has_value();
    } catch (const UsageError&) {
      gguf = true;  // FILE.gguf without a tensor: still a GGUF file
    }
    if (gguf) throw UsageError("--rhs: a GGUF rhs (FILE.gguf:TENSOR) is gmm's only, not tgmm's");
    if (!a.get("group-sizes")) throw UsageError("missing required option --group-sizes");
    return;
  }
  j.routed = a.get("ids") != nullptr;
  if (j.routed && a.get("group-sizes"))
    throw UsageError("--ids replaces --group-sizes: give one of them, not both");
  if (!j.routed && !a.get("group-sizes")) throw UsageError("missing required option --group-sizes (or --ids)");
  if (!j.routed) {
    for (const char* flag : {"weights", "num-experts"})
      if (a.get(flag)) throw UsageError(std::string("--") + flag + " needs --ids (routing by expert ids)");
  } else if (a.device_metadata) {
    throw UsageError("--device-metadata applies to --group-sizes; with --ids the ids always go to the device");
  }
  j.combine = a.get("weights") != nullptr;
  if (const std::string* e = a.get("num-experts")) {
    const std::optional<int64_t> v = tool::parse_int(*e, 1, std::numeric_limits<int32_t>::max());
    if (!v) throw UsageError("--num-experts: expected a positive integer, got '" + *e + "'");
    j.num_experts = *v;
  }
  if (const std::string* t = a.get("activation")) {
    const std::optional<vkgmm::Activation> act = vkgmm::activation_of_name(t->c_str());
    if (!act) throw UsageError(std::string("--activation: expected ") + vkgmm::kActivationNames + ", got '" + *t + "'");
    j.activation = *act;
  }
}

}  // namespace

Job prepare(const Args& args) {
  Job j;
  j.args = args;
  if (const std::string* t = args.get("out-dtype")) {
    const auto d = vkgmm::parse_dtype(*t);
    if (!d) throw UsageError("--out-dtype: expected f32, f16 or bf16, got '" + *t + "'");
    j.out_type = *d;
  }
  if (const std::string* t = args.get("input-dtype")) {
    if (*t != "bf16")
      throw UsageError("--input-dtype: only bf16 is accepted (f32 and f16 come from the .npy dtype), got '" + *t + "'");
    j.to_bf16 = true;
  }
  j.tiling = vkgmm::TilingChoice::automatic();
  if (const std::string* t = args.get("tiling")) {
    std::string why;
    const std::optional<vkgmm::Tiling> tiling = tool::parse_tiling(*t, &why);
    if (!tiling) throw UsageError("--tiling: " + why + ", got '" + *t + "'");
    j.tiling = vkgmm::TilingChoice::of(*tiling);
  }
  routing_and_epilogue(j);
  if (const std::string* f = args.get("rhs-format")) {
    const auto d = vkgmm::parse_dtype(*f);
    if (!d || !vkgmm::is_quantized(*d))
      throw UsageError(tool::with_block_formats("--rhs-format: expected one of {formats}, got '") + *f + "'");
    j.rhs_format = *d;
  }
  check_out_path(*args.get("out"));
  return j;
}
