// GGUF's block formats on the CPU (vkgmm/quant.hpp): dequantizers with exactly ggml's values, and
// quantizers at least as accurate as ggml's reference ones where those round to nearest (q8_0, q4_0,
// q4_1, q5_0, q5_1, mxfp4); the others fit each sub-block's scale (and min) by least squares. The codecs live by family: quant_small.cpp (32-value blocks with fp16
// scales), quant_mxfp4.cpp and quant_k.cpp (super-blocks); this file holds the table and the API.
//
// The blocks, byte for byte (ggml-common.h; all multi-byte fields little-endian; "half" is IEEE fp16):
//   q8_0  (32 values, 34 bytes):  half d; int8 qs[32].                    y[j] = d * qs[j]
//   q4_0  (32 values, 18 bytes):  half d; uint8 qs[16].                   y[j] = d * (nibble_j - 8), where
//         nibble_j is the low nibble of qs[j] for j < 16 and the high nibble of qs[j - 16] for j >= 16.
//   q4_1  (32 values, 20 bytes):  half d, m; uint8 qs[16].                y[j] = d * nibble_j + m
//   q5_0  (32 values, 22 bytes):  half d; uint8 qh[4]; uint8 qs[16].      y[j] = d * (q_j - 16), where q_j is
//         nibble_j (as in q4_0) plus bit j of qh (little-endian, 32 bits) as its fifth bit.
//   q5_1  (32 values, 24 bytes):  half d, m; uint8 qh[4]; uint8 qs[16].   y[j] = d * q_j + m, q_j as in q5_0.
//   iq4_nl (32 values, 18 bytes): half d; uint8 qs[16].                   y[j] = d * kv[nibble_j], kv ggml's
//         kvalues_iq4nl: -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113.
//   iq4_xs (256 values, 136 bytes): half d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]. Sub-block
//         ib = i / 32 has the 6-bit ls = (scales_l[ib / 2] >> 4 (ib % 2)) & 15 | ((scales_h >> 2 ib) & 3) << 4,
//         its values packed as iq4_nl's in qs[16 ib ..]: y[i] = (d * (ls - 32)) * kv[nibble].
//   mxfp4 (32 values, 17 bytes):  uint8 e (E8M0); uint8 qs[16].           y[j] = kv[nibble_j] * 2^(e - 128)
//         with the nibbles as in q4_0 and kv = {0, 1, 2, 3, 4, 6, 8, 12, -0, -1, ..., -12}: twice the e2m1
//         values {0, 0.5, 1, 1.5, 2, 3, 4, 6}, so ggml folds the matching 1/2 into the scale: 2^(e - 127) / 2.
//         ggml reads every e as a number, 255 too (2^127), and e = 0 as 2^-128; so does vkgmm.
//   q4_K  (256 values, 144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]. Sub-block j = i / 32
//         has a 6-bit scale sc_j and min m_j (the packing in scale_min below) and
//         y[i] = (d * sc_j) * q_i - (dmin * m_j); q_i is the low nibble of qs[32 c + r] for r < 32 and the
//         high nibble of qs[32 c + r - 32] for r >= 32, where c = i / 64, r = i % 64.
//   q5_K  (256 values, 176 bytes): half d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]. As q4_K,
//         with a fifth bit: bit 2c (r < 32) or 2c + 1 (r >= 32) of qh[r % 32] adds 16 to q_i.
//   q6_K  (256 values, 210 bytes): uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d.
//         y[i] = d * scales[i / 16] * (q_i - 32), q_i six bits: for h = i / 128, t = (i % 128) / 32,
//         l = i % 32, its low four bits are ql[64 h + 32 (t % 2) + l], the low nibble for t < 2 and the high
//         one for t >= 2, and its top two bits are bits 2t, 2t + 1 of qh[32 h + l].
//   q2_K  (256 values, 84 bytes): uint8 scales[16]; uint8 qs[64]; half d, dmin. With h, t, l as q6_K's,
//         q_i is bits 2t, 2t + 1 of qs[32 h + l], and sc = scales[i / 16]:
//         y[i] = (d * (sc & 15)) * q_i - dmin * (sc >> 4).
//   q3_K  (256 values, 110 bytes): uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; half d. q_i as q2_K's
//         plus bit 4h + t of hmask[l] as its bit 2; y[i] = (d * (s_j - 32)) * (q_i - 4), j = i / 16, s_j
//         6 bits: the nibble 4 (j / 8) of scales[j % 8], topped by bits 2 (j / 4), + 1 of scales[8 + j % 4].
//
// Every product above is exact in fp32 (at most 24 significant bits: an 11-bit half times small integers,
// or a power of two times one), so the order of the multiplications and a fused multiply-add in q4_K's
// "- dmin * m" or q4_1's "+ m" cannot change a value (one rounding, of the sum, either way): these are
// ggml's values bit for bit.
#include "vkgmm/quant.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "quant_codec.hpp"

namespace vkgmm::quant {
namespace {

struct Codec {
  codec::DequantFn dequant;
  codec::QuantFn quant;
};

Codec codec_of(DType t) {
  using namespace codec;
  switch (t) {
    case DType::q8_0: return {dequant_q8_0, quant_q8_0};
    case DType::q4_0: return {dequant_q4_0, quant_q4_0};
    case DType::q4_1: return {dequant_q4_1, quant_q4_1};
    case DType::q5_0: return {dequant_q5_0, quant_q5_0};
    case DType::q5_1: return {dequant_q5_1, quant_q5_1};
    case DType::iq4_nl: return {dequant_iq4_nl, quant_iq4_nl};
    case DType::iq4_xs: return {dequant_iq4_xs, quant_iq4_xs};
    case DType::q4_K: return {dequant_q4_K, quant_q4_K};
    case DType::q5_K: return {dequant_q5_K, quant_q5_K};
    case DType::q6_K: return {dequant_q6_K, quant_q6_K};
    case DType::q2_K: return {dequant_q2_K, quant_q2_K};
    case DType::q3_K: return {dequant_q3_K, quant_q3_K};
    case DType::mxfp4: return {dequant_mxfp4, quant_mxfp4};
    case DType::f32:
    case DType::f16:
    case DType::bf16: break;
  }
  return {nullptr, nullptr};
}

}  // namespace

void dequantize(DType t, const uint8_t* blocks, uint64_t count, float* out) {
  const uint64_t bytes = storage_bytes(t, count);  // throws for an unknown type or a partial block
  if (!is_quantized(t)) {
    const std::vector<float> v = decode(t, blocks, static_cast<size_t>(count));
    std::copy(v.begin(), v.end(), out);
    return;
  }
  const Codec c = codec_of(t);
  const uint64_t per = block_elements(t), size = block_bytes(t);
  for (uint64_t i = 0; i < bytes / size; ++i) c.dequant(blocks + i * size, out + i * per);
}

std::vector<float> dequantize(DType t, const std::vector<uint8_t>& blocks, uint64_t count) {
  if (blocks.size() != storage_bytes(t, count))
    throw Error(Status::invalid_argument, std::to_string(blocks.size()) + " bytes are not " + std::to_string(count) +
                                              " values of " + dtype_name(t));
  std::vector<float> out(static_cast<size_t>(count));
  dequantize(t, blocks.data(), count, out.data());
  return out;
}

std::vector<uint8_t> quantize(DType t, const float* x, uint64_t count) {
  if (!is_quantized(t))
    throw Error(Status::invalid_argument, std::string("quantize: ") + dtype_name(t) + " is not a block format");
  const uint64_t bytes = storage_bytes(t, count);
  for (uint64_t i = 0; i < count; ++i)
    if (!std::isfinite(x[i]))
      throw Error(Status::invalid_argument,
                  "quantize: value " + std::to_string(i) + " is not finite (" + dtype_name(t) + " holds finite values only)");
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  const Codec c = codec_of(t);
  const uint64_t per = block_elements(t), size = block_bytes(t);
  for (uint64_t i = 0; i < bytes / size; ++i) c.quant(x + i * per, out.data() + i * size);
  return out;
}

std::vector<float> dequantize_experts(DType t, const uint8_t* data, int64_t experts, int64_t n, int64_t k) {
  if (experts < 0 || n < 0 || k < 0)
    throw Error(Status::invalid_argument, "dequantize_experts: negative size");
  if (static_cast<uint64_t>(k) % block_elements(t) != 0)
    throw Error(Status::invalid_argument, "k = " + std::to_string(k) + " is not a multiple of " + dtype_name(t) +
                                              "'s block of " + std::to_string(block_elements(t)) + " values");
  // Each of the experts * n rows is whole blocks, stored one after another: the tensor is one run of
  // blocks.
  const uint64_t e = static_cast<uint64_t>(experts), rows = static_cast<uint64_t>(n), cols = static_cast<uint64_t>(k);
  // Refused before the product wraps: more values than a vector of floats can hold.
  const uint64_t most = std::vector<float>().max_size();
  if (e && rows && cols && (rows > most / e || cols > most / (e * rows)))
    throw Error(Status::invalid_argument, "dequantize_experts: " + std::to_string(experts) + " x " + std::to_string(n) +
                                              " x " + std::to_string(k) + " values are more than a vector holds");
  const uint64_t count = e * rows * cols;
  std::vector<float> out(static_cast<size_t>(count));
  dequantize(t, data, count, out.data());
  return out;
}

}  // namespace vkgmm::quant
