// `vkgmm quantize`: <f4 weights [E, n, k] (or [n, k], E = 1) to GGUF blocks along k, written as a |u1
// array [E, n, (k / B) * S] (B values in S bytes per block): the bytes `vkgmm run gmm --rhs-format F`
// reads, and those of a GGUF expert tensor of that type. The quantizers are vkgmm::quant's (round to
// nearest per block at least; never less accurate than ggml's reference ones where those round to nearest).
// Everything is checked before anything is written; the output is written atomically (npy::write).
#include "quantize.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "fail.hpp"
#include "flags.hpp"
#include "npy.hpp"
#include "run_output.hpp"
#include "usage_error.hpp"
#include "vkgmm/quant.hpp"
#include "vkgmm/types.hpp"

namespace {

using tool::fail;
using vkgmm::DType;

const char kUsage[] =
    "usage: vkgmm quantize --format F --in W.npy --out Q.npy\n"
    "\n"
    "Quantizes expert weights to one of GGUF's block formats, as GGUF stores expert tensors: per expert,\n"
    "n rows of k values, blocks along k.\n"
    "  --format F   one of {formats} (values per block B, bytes per block S:\n"
    "               {sizes})\n"
    "  --in W.npy   <f4 [E, n, k] or [n, k] (E = 1); k a multiple of B; finite values\n"
    "  --out Q.npy  written as |u1 [E, n, (k / B) * S]: the rhs of vkgmm run gmm --rhs-format F\n";

// kUsage with the formats and each one's B/S filled in from the type list.
std::string usage() { return tool::with_block_formats(kUsage); }

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

struct Options {
  std::optional<std::string> format, in, out;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    // --flag value or --flag=value, as vkgmm run takes them.
    const std::string arg = argv[i];
    const size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string a = arg.substr(0, eq);
    std::optional<std::string>* slot = a == "--format" ? &o.format : a == "--in" ? &o.in : a == "--out" ? &o.out : nullptr;
    if (!slot) throw UsageError("unknown argument '" + arg + "' for quantize (see vkgmm quantize --help)");
    if (*slot) throw UsageError(a + " given twice");
    if (eq == std::string::npos && i + 1 >= argc) throw UsageError(a + " needs a value");
    *slot = eq != std::string::npos ? arg.substr(eq + 1) : std::string(argv[++i]);
    if ((*slot)->empty()) throw UsageError(a + " needs a non-empty value");
  }
  if (!o.format) throw UsageError(tool::with_block_formats("--format is required (one of {formats})"));
  if (!o.in) throw UsageError("--in is required (an <f4 .npy of shape [E, n, k] or [n, k])");
  if (!o.out) throw UsageError("--out is required");
  check_out_path(*o.out);
  return o;
}

DType parse_format(const std::string& name) {
  const std::optional<DType> t = vkgmm::parse_dtype(name);
  if (!t || !vkgmm::is_quantized(*t))
    throw UsageError("--format: unknown format '" + name + tool::with_block_formats("' (expected one of {formats})"));
  return *t;
}

int quantize(const Options& o) {
  const DType t = parse_format(*o.format);
  npy::Array in;
  try {
    in = npy::read(*o.in);
  } catch (const std::runtime_error& e) {
    throw UsageError("--in: " + std::string(e.what()));
  }
  if (in.descr != "<f4") throw UsageError("--in: expected dtype <f4, got " + in.descr);
  if (in.shape.size() != 2 && in.shape.size() != 3)
    throw UsageError("--in: expected shape [E, n, k] or [n, k], got " + shape_text(in.shape));
  const bool has_e = in.shape.size() == 3;
  const int64_t E = has_e ? in.shape[0] : 1, n = in.shape[has_e ? 1 : 0], k = in.shape[has_e ? 2 : 1];
  const int64_t B = static_cast<int64_t>(vkgmm::block_elements(t)), S = static_cast<int64_t>(vkgmm::block_bytes(t));
  if (k % B != 0)
    throw UsageError("--in: k = " + std::to_string(k) + " (shape " + shape_text(in.shape) + ") must be a multiple of " +
                     std::to_string(B) + ", the values per " + vkgmm::dtype_name(t) + " block");
  // A file of no elements may claim any k; its rows' byte length must still be a dimension an .npy can have.
  if (k / B > std::numeric_limits<int64_t>::max() / S)
    throw UsageError("--in: k = " + std::to_string(k) + " (shape " + shape_text(in.shape) + ") is too large: a row of " +
                     vkgmm::dtype_name(t) + " blocks would take more than 2^63 - 1 bytes");

  std::vector<float> x(in.data.size() / 4);
  if (!x.empty()) std::memcpy(x.data(), in.data.data(), in.data.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i])) {
      const int64_t idx = static_cast<int64_t>(i);
      const std::string at = has_e ? shape_text({idx / (n * k), idx / k % n, idx % k}) : shape_text({idx / k, idx % k});
      throw UsageError("--in: the value at " + at + " is not finite (" + vkgmm::dtype_name(t) +
                       " blocks hold finite values only)");
    }

  npy::Array out;
  out.descr = "|u1";
  out.shape = {E, n, k / B * S};
  out.data = vkgmm::quant::quantize(t, x.data(), x.size());
  try {
    write_npy_out(*o.out, out);
  } catch (const std::exception& e) {
    return fail(1, e.what());  // write_npy_out names --out
  }
  return 0;
}

}  // namespace

int quantize_main(int argc, char** argv) {
  if (tool::wants_help(argc, argv)) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  return exit_status_of([&] { return quantize(parse(argc, argv)); });
}
