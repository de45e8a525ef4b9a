// `vkgmm run`'s command line: the words on it, then the options that do not depend on the operation,
// parsed and checked before any file is read (the order of the CLI's error messages depends on it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "vkgmm/ops.hpp"
#include "vkgmm/types.hpp"

extern const char kRunUsage[];

struct Args {
  std::string op;                             // "gmm" or "tgmm"
  std::map<std::string, std::string> values;  // flags with a value, without the leading "--"
  bool transpose_rhs = false;
  bool check = false;
  bool device_metadata = false;  // --device-metadata: the group sizes in a device buffer (the device path)
  bool help = false;

  const std::string* get(const std::string& flag) const;
};

// Throws UsageError for an unknown, repeated or incomplete option. --help anywhere wins: `help` is set
// and nothing else is looked at.
Args parse_args(int argc, char** argv);

// An optional count flag (--group-offset, --num-actual-groups): `fallback` when absent, else an integer
// in [0, 2^31) or UsageError naming the flag.
int64_t optional_count(const Args& a, const std::string& flag, int64_t fallback);

// The options every operation shares, resolved.
struct Job {
  Args args;
  vkgmm::DType out_type = vkgmm::DType::f32;
  bool to_bf16 = false;  // --input-dtype bf16
  vkgmm::TilingChoice tiling;
  bool routed = false;   // gmm --ids: rows routed by expert ids instead of --group-sizes
  bool combine = false;  // --weights: the slots combined into [T, n_out]
  int64_t num_experts = 0;  // --num-experts (0: not given)
  vkgmm::Activation activation = vkgmm::Activation::none;  // --activation
  std::optional<vkgmm::DType> rhs_format;  // --rhs-format: a block format (gmm only)
};

// Resolves --out-dtype, --input-dtype, --tiling, --activation, --num-experts and --rhs-format, refuses the flags that
// do not go together (--ids with --group-sizes, --weights without --ids, routing or an epilogue with
// tgmm, ...) and an unwritable --out (UsageError), all before any file is read.
Job prepare(const Args& args);
