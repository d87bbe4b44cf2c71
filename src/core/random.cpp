#include "core/random.h"

#include <cmath>

namespace orochi {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Uniform in (0, 1]: never 0, so log() below is finite.
inline float to_unit(uint32_t x) { return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f); }

}  // namespace

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

float counter_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t pair = index >> 1;
  const auto r = philox4x32({static_cast<uint32_t>(pair), static_cast<uint32_t>(pair >> 32),
                             static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                            {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const float radius = std::sqrt(-2.0f * std::log(to_unit(r[0])));
  const float angle = 6.28318530717958647692f * to_unit(r[1]);
  return (index & 1) ? radius * std::sin(angle) : radius * std::cos(angle);
}

Tensor normal_tensor(const Shape& shape, uint64_t seed, uint64_t stream) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  float* p = t.data<float>();
  const int64_t n = t.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = counter_normal(seed, stream, static_cast<uint64_t>(i));
  return t;
}

}  // namespace orochi
