#include "core/torch_cpu_normal.h"

#include <bit>
#include <cmath>
#include <numbers>

namespace orochi {
namespace {

// Float constants exactly as avx_mathfun.h spells them (each a float literal or a double rounded
// to float when its table is built).
constexpr float kSqrtHalf = static_cast<float>(0.707106781186547524);
constexpr float kLogP[9] = {7.0376836292E-2f, -1.1514610310E-1f, 1.1676998740E-1f,
                            -1.2420140846E-1f, 1.4249322787E-1f, -1.6668057665E-1f,
                            2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f};
constexpr float kLogQ1 = -2.12194440e-4f;
constexpr float kLogQ2 = 0.693359375f;
constexpr float kMinusDP1 = -0.78515625f;
constexpr float kMinusDP2 = -2.4187564849853515625e-4f;
constexpr float kMinusDP3 = -3.77489497744594108e-8f;
constexpr float kSinCof[3] = {-1.9515295891E-4f, 8.3321608736E-3f, -1.6666654611E-1f};
constexpr float kCosCof[3] = {2.443315711809948E-005f, -1.388731625493765E-003f, 4.166664568298827E-002f};
constexpr float kFourOverPi = static_cast<float>(1.27323954473516);

// torch's AVX2 kernels are built by GCC with -mfma and its default -ffp-contract=fast, which fuses
// a vector multiply into the add or subtract that consumes it (statement order decides which of two
// multiplies is fused). These helpers spell out each fused pair explicitly; the golden test
// checks the result bit for bit against torch.
inline float fmadd(float a, float b, float c) { return std::fma(a, b, c); }

// avx_mathfun's log256_ps for one lane (x > 0 here: x = 1 − u with u < 1).
float cephes_logf(float x) {
  const float one = 1.0f;
  x = std::max(x, std::bit_cast<float>(0x00800000));  // cut off denormals
  int32_t exponent_bits = static_cast<int32_t>(std::bit_cast<uint32_t>(x) >> 23);
  x = std::bit_cast<float>((std::bit_cast<uint32_t>(x) & ~0x7f800000u) | std::bit_cast<uint32_t>(0.5f));
  float e = static_cast<float>(exponent_bits - 0x7f);
  e = e + one;
  const bool below = x < kSqrtHalf;
  const float tmp = below ? x : 0.0f;
  x = x - one;
  e = e - (below ? one : 0.0f);
  x = x + tmp;
  const float z = x * x;
  float y = kLogP[0];
  for (int k = 1; k < 9; ++k) y = fmadd(y, x, kLogP[k]);  // y = y·x + p_k, fused
  y = y * x;
  y = fmadd(y, z, e * kLogQ1);   // y·z + e·q1: the earlier multiply (y·z) is the fused one
  y = fmadd(-z, 0.5f, y);        // y − z·0.5
  x = fmadd(e, kLogQ2, x + y);   // (x + y) + e·q2
  return x;
}

// avx_mathfun's sincos256_ps for one lane.
void cephes_sincosf(float x, float& s, float& c) {
  uint32_t sign_bit_sin = std::bit_cast<uint32_t>(x) & 0x80000000u;
  x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
  float y = x * kFourOverPi;
  int32_t j = static_cast<int32_t>(y);  // cvttps: truncation
  j = (j + 1) & ~1;
  y = static_cast<float>(j);
  const uint32_t swap_sign_bit_sin = static_cast<uint32_t>(j & 4) << 29;
  const bool poly_is_cos = (j & 2) == 0;  // poly_mask set: the "first polynom" is the sine's
  // Extended-precision reduction x = ((x − y·DP1) − y·DP2) − y·DP3, each step fused.
  x = fmadd(y, kMinusDP1, x);
  x = fmadd(y, kMinusDP2, x);
  x = fmadd(y, kMinusDP3, x);
  const uint32_t sign_bit_cos = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  sign_bit_sin ^= swap_sign_bit_sin;
  const float z = x * x;
  float yc = fmadd(kCosCof[0], z, kCosCof[1]);
  yc = fmadd(yc, z, kCosCof[2]);
  yc = yc * z;
  yc = fmadd(yc, z, -(z * 0.5f));  // y·z − z·0.5: the earlier multiply is fused
  yc = yc + 1.0f;
  float ys = fmadd(kSinCof[0], z, kSinCof[1]);
  ys = fmadd(ys, z, kSinCof[2]);
  ys = ys * z;
  ys = fmadd(ys, x, x);
  // poly_mask picks ys for the sine (and yc for the cosine) where (j & 2) == 0.
  const float sin_val = poly_is_cos ? ys : yc;
  const float cos_val = poly_is_cos ? yc : ys;
  s = std::bit_cast<float>(std::bit_cast<uint32_t>(sin_val) ^ sign_bit_sin);
  c = std::bit_cast<float>(std::bit_cast<uint32_t>(cos_val) ^ sign_bit_cos);
}

// at::uniform_real_distribution<float>(0, 1): 24 random bits scaled by 2^-24.
float uniform_float(TorchMt19937& mt) { return static_cast<float>(mt.next() & 0xFFFFFFu) * (1.0f / 16777216.0f); }

// at::uniform_real_distribution<double>(0, 1) on random64() = (first << 32) | second: 53 bits.
double uniform_double(TorchMt19937& mt) {
  const uint64_t hi = mt.next(), lo = mt.next();
  const uint64_t bits = (hi << 32) | lo;
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace

TorchMt19937::TorchMt19937(uint64_t seed) {
  state_[0] = static_cast<uint32_t>(seed & 0xffffffffu);  // torch keeps the low 32 bits
  for (uint32_t j = 1; j < 624; ++j) state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + j;
  index_ = 624;
}

uint32_t TorchMt19937::next() {
  if (index_ >= 624) {
    for (int k = 0; k < 624; ++k) {
      const uint32_t y = (state_[k] & 0x80000000u) | (state_[(k + 1) % 624] & 0x7fffffffu);
      state_[k] = state_[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

void torch_avx2_normal_block16(float* d) {
  const float two_pi = static_cast<float>(2.0f * std::numbers::pi);  // _mm256_set1_ps(2.0f * pi<double>)
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j];
    const float u2 = d[j + 8];
    const float radius = std::sqrt(-2.0f * cephes_logf(u1));
    const float theta = two_pi * u2;
    float s, c;
    cephes_sincosf(theta, s, c);
    // _mm256_fmadd_ps(n, std = 1, mean = 0): n itself, except that −0 becomes +0.
    d[j] = std::fma(radius * c, 1.0f, 0.0f);
    d[j + 8] = std::fma(radius * s, 1.0f, 0.0f);
  }
}

void torch_scalar_normal_block16(float* d) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j];
    const float u2 = d[j + 8];
    const float radius = std::sqrt(-2.0f * std::log(u1));                          // logf
    const float theta = static_cast<float>(2.0 * std::numbers::pi * static_cast<double>(u2));  // 2.0f * pi<double> * u2
    // radius · cos(θ) · std + mean with std = 1, mean = 0: the product, except that −0 becomes +0.
    d[j] = radius * std::cos(theta) * 1.0f + 0.0f;
    d[j + 8] = radius * std::sin(theta) * 1.0f + 0.0f;
  }
}

Tensor torch_cpu_randn(const Shape& shape, uint64_t seed, TorchCpuKernel kernel) {
  void (*block16)(float*) = kernel == TorchCpuKernel::kAvx2 ? torch_avx2_normal_block16 : torch_scalar_normal_block16;
  Tensor out = Tensor::empty(shape, DType::kF32);
  const int64_t n = out.numel();
  float* d = out.data<float>();
  TorchMt19937 mt(seed);
  if (n >= 16) {  // normal_fill_AVX2 / normal_fill
    for (int64_t i = 0; i < n; ++i) d[i] = uniform_float(mt);
    for (int64_t i = 0; i + 16 <= n; i += 16) block16(d + i);
    if (n % 16 != 0) {  // the ragged tail: 16 fresh uniforms overwrite the last 16 values
      float* tail = d + n - 16;
      for (int k = 0; k < 16; ++k) tail[k] = uniform_float(mt);
      block16(tail);
    }
    return out;
  }
  // The serial kernel: normal_distribution<double> caches r·sin θ for the next element.
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = uniform_double(mt), u2 = uniform_double(mt);
    const double r = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * std::numbers::pi * u1;
    d[i] = static_cast<float>(r * std::cos(theta));
    if (i + 1 < n) d[i + 1] = static_cast<float>(r * std::sin(theta));
  }
  return out;
}

}  // namespace orochi
