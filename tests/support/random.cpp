#include "support/random.h"

#include <random>

namespace orochi::testing {

Tensor random_normal(const Shape& shape, uint64_t seed, float stddev) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

Tensor random_indices(int64_t n, int64_t limit, uint64_t seed) {
  Tensor t = Tensor::empty({n}, DType::kI64);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, limit - 1);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = dist(rng);
  return t;
}

}  // namespace orochi::testing
