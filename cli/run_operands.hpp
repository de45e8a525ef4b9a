// `vkgmm run`'s .npy files <-> the operands the device sees: reading and checking input files, converting
// them to the element types the plan runs (f32, f16, bf16), uploading them, and turning the output's
// bytes back into an .npy array. Messages name the CLI flag (--lhs, --rhs, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "npy.hpp"
#include "run_args.hpp"
#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"

// The file of flag `flag`, read; UsageError("--flag: ...") when it is missing or malformed.
npy::Array load(const Args& a, const std::string& flag);

// "(3, 4)", as numpy prints a shape.
std::string shape_str(const std::vector<int64_t>& s);

// UsageError unless `arr` has rank `rank`; `layout` ("[m, k]") says what the dimensions mean.
void expect_rank(const npy::Array& arr, const std::string& flag, size_t rank, const char* layout);

// An operand as the device will see it: its element type and bytes (exactly its elements: 16-bit
// operands of an odd element count are not padded here; padding device buffers is vkgmm's job).
struct Operand {
  vkgmm::DType type = vkgmm::DType::f32;
  std::vector<uint8_t> bytes;

  // The values the device sees, for the reference (a block format: dequantized, see run_operands.cpp).
  std::vector<float> values() const;
};

// lhs / rhs: <f4 is f32 (or bf16, rounded, with --input-dtype bf16); <f2 is f16.
Operand input_operand(npy::Array&& arr, const std::string& flag, bool to_bf16);

// UsageError naming --input-dtype when it is given (to_bf16) but rounds nothing: neither operand came
// from f32 values (`lhs_f32`, `rhs_f32`); `lhs_type` and `rhs_type` say what they are instead.
void expect_something_to_round(bool to_bf16, bool lhs_f32, bool rhs_f32, const std::string& lhs_type,
                               const std::string& rhs_type);

// gmm's rhs as the plan sees it: its operand (a float type, or a block format's bytes as stored) and
// its dims; memory [g_local, n, k] when `transposed`, else [g_local, k, n].
struct GmmRhs {
  Operand op;
  int64_t g_local = 0, k = 0, n = 0;
  bool transposed = false;
  bool rounded = false;  // f32 values rounded to bf16 by --input-dtype bf16
  std::string desc;  // for messages: "shape (2, 16, 8)" or "GGUF tensor 'w' with dims [k, n, E] = [...]"
};

// --rhs FILE.gguf:TENSOR split after the first ".gguf:" (any case) into the file and the tensor, whose
// name may hold ':'; nullopt for any other --rhs (an .npy path, which may contain ':' too). UsageError
// for FILE.gguf without a tensor name.
std::optional<std::pair<std::string, std::string>> gguf_reference(const std::string& rhs);

// gmm's rhs from --rhs and --rhs-format (docs/contract.md, "The command line"):
// - an .npy: <f4 / <f2 [G_local, k, n] ([G_local, n, k] with --transpose-rhs); with --rhs-format F,
//   |u1 raw blocks [G_local, n, (k/B)*S] (transposed implied);
// - FILE.gguf:TENSOR: GGUF dims [k, n, E] or [k, n] (E = 1), memory [E, n, k]: always transposed; its
//   bytes uploaded as they are (an f32 tensor rounded to bf16 with --input-dtype bf16, as an f32 .npy
//   is); --rhs-format, if given, must be its type.
// UsageError naming --rhs or --rhs-format otherwise.
GmmRhs gmm_rhs(const Job& j);

// existing_out: any float file, converted to the output type (exact when widening).
Operand existing_operand(npy::Array&& arr, vkgmm::DType out_type);

// --group-sizes: <i4, or <i8 whose values fit int32, of rank 1.
std::vector<int32_t> group_sizes_of(const npy::Array& arr);

// --ids: <i4, or <i8 whose values fit int32, of rank 2 [T, top_k] with top_k >= 1; every id is an expert
// (>= 0) or -1 (none), and below num_experts when that is given (> 0). UsageError naming --ids otherwise.
std::vector<int32_t> ids_of(const npy::Array& arr, int64_t num_experts);

// --weights, --bias: <f4 of exactly `shape` (`layout` says what it means), kept f32: --input-dtype never
// rounds them. UsageError naming the flag otherwise.
Operand f32_operand(npy::Array&& arr, const std::string& flag, const std::vector<int64_t>& shape, const char* layout);

// A device buffer holding `op`, which must hold at least `needed` bytes (the plan's OperandSizes);
// `flag` names the operand in the error.
vkgmm::Buffer upload(vkgmm::Context& ctx, const Operand& op, VkDeviceSize needed, const char* flag);

// The output file's array: <f4 for f32 and bf16 (widened exactly), <f2 for f16.
npy::Array output_array(vkgmm::DType type, const std::vector<uint8_t>& bytes, std::vector<int64_t> shape);
