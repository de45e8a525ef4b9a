// `vkgmm run gmm|tgmm`: read .npy operands, run one grouped matmul on the device, write the result.
//
// Everything that can be checked from the files alone (flags, ranks, matching k / m, existing_out's shape)
// is checked before the device is touched, with messages naming the CLI flag; the library's plan then
// checks the contract's rules (group sizes, offsets, tiling). The output is written last and atomically,
// so any failure, including a failed --check, leaves no output file.
#include "run.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy.hpp"
#include "vkgmm/context.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/reference.hpp"
#include "vkgmm/types.hpp"

// .npy data is little-endian and is uploaded as-is.
static_assert(std::endian::native == std::endian::little, "vkgmm run assumes a little-endian host");

namespace {

using vkgmm::DType;

// A bad command line or bad input file: exit status 2. Anything else that goes wrong is status 1.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char kUsage[] =
    "usage:\n"
    "  vkgmm run gmm  --lhs L.npy --rhs R.npy --group-sizes GS.npy --out OUT.npy\n"
    "                 [--transpose-rhs] [--group-offset N] [--existing-out E.npy]\n"
    "                 [--out-dtype f32|f16|bf16] [--input-dtype bf16] [--tiling TM,TK,TN] [--check]\n"
    "  vkgmm run tgmm --lhs L.npy --rhs R.npy --group-sizes GS.npy --out OUT.npy\n"
    "                 [--group-offset N] [--num-actual-groups N] [--existing-out E.npy]\n"
    "                 [--out-dtype f32|f16|bf16] [--input-dtype bf16] [--tiling TM,TK,TN] [--check]\n"
    "\n"
    "gmm:  lhs [m, k], rhs [G_local, k, n] ([G_local, n, k] with --transpose-rhs), out [m, n].\n"
    "      rhs holds the active groups group_offset .. group_offset + G_local; other rows get\n"
    "      existing_out (or 0).\n"
    "tgmm: lhs [k, m], rhs [m, n], out [num_actual_groups, k, n] (+ existing_out).\n"
    "\n"
    "Inputs are .npy files (format 1.0-3.0, little-endian, C order): <f4 (f32) or <f2 (f16);\n"
    "--input-dtype bf16 rounds f32 inputs to bf16. group sizes: <i4 or <i8, all G groups.\n"
    "existing_out: <f4 or <f2, converted to the output type. The output is <f4 for f32 and bf16\n"
    "(widened exactly) and <f2 for f16; the default output type is f32.\n"
    "--check compares with the CPU reference and fails (status 1) outside atol 1e-3 + rtol 1e-5\n"
    "(rtol 1e-2 when any type is 16-bit).\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments or input, 1 runtime or device error. On error: one line on\n"
    "stderr and no output file.\n";

struct Args {
  std::string op;
  std::map<std::string, std::string> values;  // flags with a value, without the leading "--"
  bool transpose_rhs = false;
  bool check = false;
  bool help = false;

  const std::string* get(const std::string& flag) const {
    auto it = values.find(flag);
    return it == values.end() ? nullptr : &it->second;
  }
};

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> words(argv + (argc > 0 ? 1 : 0), argv + argc);
  // --help anywhere wins over every other problem on the line.
  for (const auto& w : words)
    if (w == "--help" || w == "-h") {
      a.help = true;
      return a;
    }
  if (words.empty()) throw UsageError("missing operation: expected 'gmm' or 'tgmm' (see vkgmm run --help)");
  a.op = words[0];
  if (a.op != "gmm" && a.op != "tgmm")
    throw UsageError("unknown operation '" + a.op + "': expected 'gmm' or 'tgmm'");

  std::vector<std::string> valued = {"lhs", "rhs", "group-sizes", "out", "group-offset", "existing-out",
                                     "out-dtype", "input-dtype", "tiling"};
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
    if (name == "check" || (name == "transpose-rhs" && a.op == "gmm")) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      bool& flag = name == "check" ? a.check : a.transpose_rhs;
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
  for (const char* required : {"lhs", "rhs", "group-sizes", "out"})
    if (!a.get(required)) throw UsageError(std::string("missing required option --") + required);
  return a;
}

int64_t parse_count(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw UsageError("--" + flag + ": expected a non-negative integer, got '" + text + "'");
  return v;
}

vkgmm::Tiling parse_tiling(const std::string& text) {
  int64_t t[3];
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    const auto [q, ec] = std::from_chars(p, end, t[i]);
    const bool sep_ok = i < 2 ? (q != end && *q == ',') : q == end;
    if (ec != std::errc() || !sep_ok)
      throw UsageError("--tiling: expected TM,TK,TN (three positive integers), got '" + text + "'");
    if (t[i] <= 0) throw UsageError("--tiling: every value must be positive, got '" + text + "'");
    p = q + 1;
  }
  return {t[0], t[1], t[2]};
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

npy::Array load(const Args& a, const std::string& flag) {
  try {
    return npy::read(*a.get(flag));
  } catch (const std::runtime_error& e) {
    throw UsageError("--" + flag + ": " + e.what());
  }
}

void expect_rank(const npy::Array& arr, const std::string& flag, size_t rank, const char* layout) {
  if (arr.shape.size() != rank)
    throw UsageError("--" + flag + ": expected rank " + std::to_string(rank) + " " + layout + ", got shape " +
                     shape_str(arr.shape));
}

std::vector<float> f32_values(const npy::Array& arr) {
  std::vector<float> v(arr.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), arr.data.data(), arr.data.size());
  return v;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// An operand as the device will see it: its element type and bytes.
struct Operand {
  DType type = DType::f32;
  std::vector<uint8_t> bytes;

  // The values the device sees, for the reference.
  std::vector<float> values() const {
    if (type == DType::f32) {
      std::vector<float> v(bytes.size() / 4);
      if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
      return v;
    }
    return vkgmm::decode(type, bytes.data(), bytes.size() / 2);
  }
};

// lhs / rhs: <f4 is f32 (or bf16, rounded, with --input-dtype bf16); <f2 is f16.
Operand input_operand(npy::Array&& arr, const std::string& flag, bool to_bf16) {
  if (arr.descr == "<f2") return {DType::f16, std::move(arr.data)};
  if (arr.descr != "<f4") throw UsageError("--" + flag + ": expected dtype <f4 or <f2, got " + arr.descr);
  if (to_bf16) return {DType::bf16, vkgmm::encode(DType::bf16, f32_values(arr))};
  return {DType::f32, std::move(arr.data)};
}

// existing_out: any float file, converted to the output type (exact when widening).
Operand existing_operand(npy::Array&& arr, DType out_type) {
  if (arr.descr != "<f4" && arr.descr != "<f2")
    throw UsageError("--existing-out: expected dtype <f4 or <f2, got " + arr.descr);
  const DType from = arr.descr == "<f4" ? DType::f32 : DType::f16;
  if (from == out_type) return {out_type, std::move(arr.data)};
  const std::vector<float> v =
      from == DType::f32 ? f32_values(arr) : vkgmm::decode(DType::f16, arr.data.data(), arr.data.size() / 2);
  return {out_type, out_type == DType::f32 ? f32_bytes(v) : vkgmm::encode(out_type, v)};
}

std::vector<int32_t> group_sizes_of(const npy::Array& arr) {
  expect_rank(arr, "group-sizes", 1, "[G]");
  std::vector<int32_t> gs(static_cast<size_t>(arr.shape[0]));
  for (size_t i = 0; i < gs.size(); ++i) {
    if (arr.descr == "<i4") {
      std::memcpy(&gs[i], arr.data.data() + 4 * i, 4);
    } else if (arr.descr == "<i8") {
      int64_t v;
      std::memcpy(&v, arr.data.data() + 8 * i, 8);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw UsageError("--group-sizes: value " + std::to_string(v) + " at index " + std::to_string(i) +
                         " does not fit int32");
      gs[i] = static_cast<int32_t>(v);
    } else {
      throw UsageError("--group-sizes: expected dtype <i4 or <i8, got " + arr.descr);
    }
  }
  return gs;
}

// Refuse an unwritable --out before any device work rather than after it.
void check_out_path(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw UsageError("--out: '" + out + "' is a directory");
  const fs::path parent = fs::path(out).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw UsageError("--out: directory '" + parent.string() + "' does not exist");
}

vkgmm::Buffer upload(vkgmm::Context& ctx, const Operand& op, VkDeviceSize needed, const char* flag) {
  if (op.bytes.size() < needed)
    throw vkgmm::Error(vkgmm::Status::internal, std::string("--") + flag + ": holds " +
                                                    std::to_string(op.bytes.size()) + " bytes, the plan needs " +
                                                    std::to_string(needed));
  // Never a zero-size buffer: an empty operand still gets a (unread) 4-byte buffer.
  vkgmm::Buffer buf = ctx.create_buffer(std::max<VkDeviceSize>(4, op.bytes.size()));
  if (!op.bytes.empty()) buf.upload(op.bytes.data(), op.bytes.size());
  return buf;
}

// Uploads the operands, runs the plan once (submit and wait) and returns the output buffer.
template <typename Plan, typename Operands>
vkgmm::Buffer run_plan(vkgmm::Context& ctx, const Plan& plan, const Operand& L, const Operand& R,
                       const std::optional<Operand>& E) {
  const vkgmm::OperandSizes sz = plan.sizes();
  vkgmm::Buffer lb = upload(ctx, L, sz.lhs, "lhs");
  vkgmm::Buffer rb = upload(ctx, R, sz.rhs, "rhs");
  vkgmm::Buffer ob = ctx.create_buffer(std::max<VkDeviceSize>(4, sz.out));
  vkgmm::Buffer eb;  // stays empty without --existing-out
  Operands ops{lb.view(), rb.view(), ob.view(), {}};
  if (E) {
    eb = upload(ctx, *E, sz.existing_out, "existing-out");
    ops.existing_out = eb.view();
  }
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
  return ob;
}

// Compares device output with the reference; prints the max abs error and throws when out of tolerance.
void check_against(const std::vector<float>& got, const std::vector<float>& want, bool low_precision) {
  const double atol = 1e-3, rtol = low_precision ? 1e-2 : 1e-5;
  if (got.size() != want.size())
    throw vkgmm::Error(vkgmm::Status::internal, "--check: the reference has " + std::to_string(want.size()) +
                                                    " elements, the output " + std::to_string(got.size()));
  double max_err = 0;
  std::optional<size_t> first_bad;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    double err;
    bool ok;
    if (std::isnan(g) || std::isnan(w)) {
      ok = std::isnan(g) && std::isnan(w);
      err = ok ? 0 : std::numeric_limits<double>::infinity();
    } else if (std::isinf(g) || std::isinf(w)) {
      ok = g == w;
      err = ok ? 0 : std::numeric_limits<double>::infinity();
    } else {
      err = std::fabs(g - w);
      ok = err <= atol + rtol * std::fabs(w);
    }
    max_err = std::max(max_err, err);
    if (!ok && !first_bad) first_bad = i;
  }
  std::printf("check: %zu elements, max abs error %.3g (atol %g, rtol %g): %s\n", got.size(), max_err, atol, rtol,
              first_bad ? "FAILED" : "ok");
  std::fflush(stdout);
  if (first_bad) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "--check: output differs from the reference at flat index %zu: got %.9g, expected %.9g",
                  *first_bad, static_cast<double>(got[*first_bad]), static_cast<double>(want[*first_bad]));
    throw std::runtime_error(msg);  // status 1: the run went wrong, not the arguments
  }
}

// The output file: <f4 for f32 and bf16 (widened exactly), <f2 for f16.
npy::Array output_array(DType type, const std::vector<uint8_t>& bytes, std::vector<int64_t> shape) {
  if (type == DType::f32) return {"<f4", std::move(shape), bytes};
  if (type == DType::f16) return {"<f2", std::move(shape), bytes};
  return {"<f4", std::move(shape), f32_bytes(vkgmm::decode(DType::bf16, bytes.data(), bytes.size() / 2))};
}

std::vector<float> output_values(DType type, const std::vector<uint8_t>& bytes) {
  return Operand{type, bytes}.values();
}

// The options that do not depend on the operation, parsed and checked before any file is read.
struct Job {
  Args args;
  DType out_type = DType::f32;
  bool to_bf16 = false;  // --input-dtype bf16
  vkgmm::TilingChoice tiling;
};

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
  j.tiling = args.get("tiling") ? vkgmm::TilingChoice::of(parse_tiling(*args.get("tiling")))
                                : vkgmm::TilingChoice::automatic();
  check_out_path(*args.get("out"));
  return j;
}

int64_t optional_count(const Args& a, const std::string& flag, int64_t fallback) {
  const std::string* v = a.get(flag);
  return v ? parse_count(flag, *v) : fallback;
}

bool any_16bit(DType a, DType b, DType c) { return a != DType::f32 || b != DType::f32 || c != DType::f32; }

void run_gmm(Job& j) {
  const Args& a = j.args;
  npy::Array lhs = load(a, "lhs"), rhs = load(a, "rhs");
  const std::vector<int32_t> group_sizes = group_sizes_of(load(a, "group-sizes"));
  expect_rank(lhs, "lhs", 2, "[m, k]");
  expect_rank(rhs, "rhs", 3, a.transpose_rhs ? "[G_local, n, k]" : "[G_local, k, n]");
  const int64_t m = lhs.shape[0], k = lhs.shape[1];
  const int64_t rhs_k = a.transpose_rhs ? rhs.shape[2] : rhs.shape[1];
  const int64_t n = a.transpose_rhs ? rhs.shape[1] : rhs.shape[2];
  // The plan sees only k and the buffer sizes; a mismatched k must be caught here.
  if (rhs_k != k)
    throw UsageError("--rhs: shape " + shape_str(rhs.shape) + " has k = " + std::to_string(rhs_k) +
                     " but --lhs " + shape_str(lhs.shape) + " has k = " + std::to_string(k) +
                     (a.transpose_rhs ? " (--transpose-rhs: rhs is [G_local, n, k])" : " (rhs is [G_local, k, n])"));

  vkgmm::GmmProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.group_sizes = group_sizes;
  p.num_rhs_groups = rhs.shape[0];
  p.group_offset = optional_count(a, "group-offset", 0);
  p.transpose_rhs = a.transpose_rhs;
  p.out_type = j.out_type;
  p.tiling = j.tiling;
  const Operand L = input_operand(std::move(lhs), "lhs", j.to_bf16);
  const Operand R = input_operand(std::move(rhs), "rhs", j.to_bf16);
  p.lhs_type = L.type;
  p.rhs_type = R.type;
  std::optional<Operand> E;
  if (a.get("existing-out")) {
    npy::Array e = load(a, "existing-out");
    if (e.shape != std::vector<int64_t>{m, n})
      throw UsageError("--existing-out: expected shape " + shape_str({m, n}) + " [m, n], got " + shape_str(e.shape));
    E = existing_operand(std::move(e), j.out_type);
    p.existing_out = true;
  }

  vkgmm::Context ctx;
  const vkgmm::GmmPlan plan(ctx, p);  // the contract's checks; throws vkgmm::Error naming the argument
  const vkgmm::Buffer ob = run_plan<vkgmm::GmmPlan, vkgmm::GmmOperands>(ctx, plan, L, R, E);

  std::vector<uint8_t> out(static_cast<size_t>(m * n) * vkgmm::dtype_size(j.out_type));
  if (!out.empty()) ob.download(out.data(), out.size());
  if (a.check)
    check_against(output_values(j.out_type, out),
                  vkgmm::reference::gmm(p, L.values(), R.values(), E ? E->values() : std::vector<float>{}),
                  any_16bit(L.type, R.type, j.out_type));
  npy::write(*a.get("out"), output_array(j.out_type, out, {m, n}));
}

void run_tgmm(Job& j) {
  const Args& a = j.args;
  npy::Array lhs = load(a, "lhs"), rhs = load(a, "rhs");
  const std::vector<int32_t> group_sizes = group_sizes_of(load(a, "group-sizes"));
  expect_rank(lhs, "lhs", 2, "[k, m]");
  expect_rank(rhs, "rhs", 2, "[m, n]");
  const int64_t k = lhs.shape[0], m = lhs.shape[1], n = rhs.shape[1];
  if (rhs.shape[0] != m)
    throw UsageError("--rhs: shape " + shape_str(rhs.shape) + " has m = " + std::to_string(rhs.shape[0]) +
                     " but --lhs " + shape_str(lhs.shape) + " [k, m] has m = " + std::to_string(m));

  vkgmm::TgmmProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.group_sizes = group_sizes;
  p.group_offset = optional_count(a, "group-offset", 0);
  p.num_actual_groups = optional_count(a, "num-actual-groups", -1);
  p.out_type = j.out_type;
  p.tiling = j.tiling;
  const Operand L = input_operand(std::move(lhs), "lhs", j.to_bf16);
  const Operand R = input_operand(std::move(rhs), "rhs", j.to_bf16);
  p.lhs_type = L.type;
  p.rhs_type = R.type;

  // The number of output groups, when the offsets are in range (the plan refuses them otherwise).
  const int64_t G = static_cast<int64_t>(group_sizes.size());
  const int64_t groups = p.num_actual_groups >= 0 ? p.num_actual_groups : G - p.group_offset;
  const bool groups_valid = groups >= 0 && p.group_offset + groups <= G;
  std::optional<Operand> E;
  npy::Array e_arr;
  if (a.get("existing-out")) {
    e_arr = load(a, "existing-out");
    if (groups_valid && e_arr.shape != std::vector<int64_t>{groups, k, n})
      throw UsageError("--existing-out: expected shape " + shape_str({groups, k, n}) +
                       " [num_actual_groups, k, n], got " + shape_str(e_arr.shape));
    p.existing_out = true;
  }

  vkgmm::Context ctx;
  const vkgmm::TgmmPlan plan(ctx, p);
  if (!groups_valid)  // the plan should have refused this; never size buffers from bad counts
    throw vkgmm::Error(vkgmm::Status::internal, "--group-offset / --num-actual-groups out of range");
  if (p.existing_out) E = existing_operand(std::move(e_arr), j.out_type);
  const vkgmm::Buffer ob = run_plan<vkgmm::TgmmPlan, vkgmm::TgmmOperands>(ctx, plan, L, R, E);

  std::vector<uint8_t> out(static_cast<size_t>(groups * k * n) * vkgmm::dtype_size(j.out_type));
  if (!out.empty()) ob.download(out.data(), out.size());
  if (a.check)
    check_against(output_values(j.out_type, out),
                  vkgmm::reference::tgmm(p, L.values(), R.values(), E ? E->values() : std::vector<float>{}),
                  any_16bit(L.type, R.type, j.out_type));
  npy::write(*a.get("out"), output_array(j.out_type, out, {groups, k, n}));
}

// One line on stderr, whatever the message holds.
int fail(int status, std::string msg) {
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  std::replace(msg.begin(), msg.end(), '\r', ' ');
  std::fprintf(stderr, "vkgmm: error: %s\n", msg.c_str());
  return status;
}

}  // namespace

int run_main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    if (args.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    Job job = prepare(args);
    if (args.op == "gmm")
      run_gmm(job);
    else
      run_tgmm(job);
    return 0;
  } catch (const UsageError& e) {
    return fail(2, e.what());
  } catch (const vkgmm::Error& e) {
    // The caller's input broke a rule: an argument error. Everything else is the device or the library.
    return fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what());
  } catch (const std::bad_alloc&) {
    return fail(1, "out of host memory");
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
}
