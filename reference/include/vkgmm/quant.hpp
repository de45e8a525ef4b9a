// GGUF's block formats on the CPU: the values a block holds (exactly ggml's dequantize_row_*), and blocks
// made from floats (`vkgmm quantize`, the tests). The layouts are ggml's block_* structs, byte for byte
// (docs/contract.md, "Quantized expert weights"); reference/quant.cpp spells each one out.
// Not part of the library (reference/, not installed): for the tests, the CLI, the bench, Python and the
// CPU reference.
#pragma once

#include <cstdint>
#include <vector>

#include "vkgmm/types.hpp"

namespace vkgmm::quant {

// The `count` values stored in `blocks` as type t, into out[0, count). For a block format count must be a
// multiple of block_elements(t) and `blocks` holds storage_bytes(t, count) bytes; the values are exactly
// ggml's (fp16 scales widened exactly, products in fp32 in ggml's order). The element types (f32, f16,
// bf16) are decoded too, so that one call serves any rhs type. Throws Error(invalid_argument) on a
// count that is not whole blocks or an unknown type.
void dequantize(DType t, const uint8_t* blocks, uint64_t count, float* out);
std::vector<float> dequantize(DType t, const std::vector<uint8_t>& blocks, uint64_t count);

// Blocks of type t (a block format) holding the `count` values x (a multiple of block_elements(t)),
// storage_bytes(t, count) bytes. Round to nearest per block at least:
//   q8_0, q4_0, q5_0: ggml's scale (amax / 127; the signed extreme / -8, / -16), stored as fp16, and each
//     value rounded to the nearest level of the stored scale: every value at least as close as ggml's
//     quantize_row_*_ref puts it (which rounds against the unrounded scale).
//   q4_1, q5_1: ggml's scale ((max - min) / 15, / 31) and min, stored as fp16, each value the nearest
//     level of the stored pair: likewise at least as close as ggml's.
//   iq4_nl: the best by squared error of the plain scale (the signed extreme at level -127) and 15
//     least-squares scales around it, and zeros, each value at its nearest level; a block's squared error
//     is at most 32 (14 d0)^2, d0 = amax / 127, where d0 is a normal fp16 number (reference/quant_small.cpp).
//   iq4_xs: each 32 values' scale found as iq4_nl's, stored as 6 bits against an fp16 super-block scale (the
//     largest in magnitude at -32), each value at its nearest level of its sub-block's stored scale.
//   mxfp4: ggml's shared exponent (floor(log2 amax) - 2, the OCP MX rule) or the next one up, whichever
//     gives the block the smaller squared error (ggml's or smaller), each value to the nearest e2m1 level.
//   q4_K, q5_K: per 32 values a (scale, min) pair found by a small least-squares search, then 6-bit scale and
//     min codes against fp16 super-block scales, and the 4-bit (q5_K: 5-bit) values rounded against the
//     final codes.
//   q6_K: per 16 values a scale by a small least-squares search, 8-bit codes against an fp16 super-block
//     scale, and the 6-bit values rounded against the final codes.
// Throws Error(invalid_argument) for an element type, a count that is not whole blocks, or a value that
// is not finite (no block holds one faithfully).
std::vector<uint8_t> quantize(DType t, const float* x, uint64_t count);

// An expert tensor as GGUF stores it ([experts, n, k] values, blocks along k, i.e. each of the
// experts * n rows is k / block_elements(t) whole blocks) widened to float [experts, n, k]: the rhs of
// reference::gmm with transpose_rhs. `data` holds storage_bytes(t, experts * n * k) bytes. Throws
// Error(invalid_argument) if k is not a multiple of the block size or a size is negative.
std::vector<float> dequantize_experts(DType t, const uint8_t* data, int64_t experts, int64_t n, int64_t k);

}  // namespace vkgmm::quant
