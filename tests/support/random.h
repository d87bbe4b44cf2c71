// Deterministic random tensors for tests.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace orochi::testing {

// Normal(0, stddev) f32 tensor from a fixed seed.
Tensor random_normal(const Shape& shape, uint64_t seed, float stddev = 1.0f);
// Uniform integers in [0, limit) as an i64 vector.
Tensor random_indices(int64_t n, int64_t limit, uint64_t seed);

}  // namespace orochi::testing
