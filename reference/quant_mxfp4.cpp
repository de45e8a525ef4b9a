// mxfp4 (reference/quant.cpp lays out its bytes): E8M0 scales and e2m1 codes.
#include <cstring>
#include <iterator>

#include "quant_codec.hpp"

namespace vkgmm::quant::codec {
namespace {

// Twice the e2m1 values, in code order (bit 3 the sign): ggml's kvalues_mxfp4.
constexpr int8_t kE2M1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// ggml's E8M0 scale with the e2m1 table's factor 2 folded in: 2^(e - 127) / 2 (ggml_e8m0_to_fp32_half).
// For e = 0 and 1 it is an fp32 subnormal, exactly representable; e = 255 is 2^127, not NaN.
float e8m0_half(uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 128); }

// The code of the e2m1 level nearest x at scale d (first of equals: +0 before -0, as ggml's search).
int nearest_e2m1(float x, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kE2M1x2[0]) * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kE2M1x2[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

double mxfp4_block_error(const float* x, uint8_t e) {
  const float d = e8m0_half(e);
  double sse = 0;
  for (int j = 0; j < kQK; ++j) {
    const double diff = double(kE2M1x2[nearest_e2m1(x[j], d)]) * d - x[j];
    sse += diff * diff;
  }
  return sse;
}

// The shared exponent: the OCP MX rule (floor(log2 amax) - 2: amax lands in [4, 8) units, the top e2m1
// level being 6), as exact integer arithmetic and as ggml computes it (floorf(log2f(amax)), which can be
// one higher just below a power of two), and one above, where clipping the largest values costs more than
// the coarser levels: whichever leaves the block the smallest squared error, the lowest of equals.
}  // namespace

void dequant_mxfp4(const uint8_t* b, float* y) {
  const float d = e8m0_half(b[0]);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(kE2M1x2[nibble32(b + 1, j)]) * d;
}

void quant_mxfp4(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  std::memset(b, 0, 17);
  if (amax == 0.0f) return;  // e = 0, every code +0
  auto clamp_e = [](long v) { return static_cast<uint8_t>(std::clamp(v, 0L, 254L)); };
  const long exact = std::ilogb(amax) - 2 + 127;
  const long ggml = static_cast<long>(std::floor(std::log2(amax))) - 2 + 127;
  uint8_t candidates[] = {clamp_e(exact), clamp_e(exact + 1), clamp_e(ggml), clamp_e(ggml + 1)};
  std::sort(std::begin(candidates), std::end(candidates));
  uint8_t best = candidates[0];
  double best_sse = mxfp4_block_error(x, best);
  for (uint8_t e : candidates) {
    const double sse = mxfp4_block_error(x, e);
    if (sse < best_sse) {
      best = e;
      best_sse = sse;
    }
  }
  b[0] = best;
  const float d = e8m0_half(best);
  for (int j = 0; j < kQK; ++j) b[1 + (j % 16)] |= static_cast<uint8_t>(nearest_e2m1(x[j], d) << (j < 16 ? 0 : 4));
}

}  // namespace vkgmm::quant::codec
