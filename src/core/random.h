// Counter-based random numbers (Philox4x32-10): element i of tensor stream s under seed k is a
// pure function of (k, s, i), so CPU, CUDA and any split of a tensor across ranks draw the same
// noise without sharing generator state.
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace orochi {

// Philox4x32 with 10 rounds: 128-bit counter, 64-bit key -> four 32-bit words.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// Standard normal sample number `index` of stream `stream` (Box-Muller on one Philox block; the
// block gives two normals, for even and odd indices).
float counter_normal(uint64_t seed, uint64_t stream, uint64_t index);

// A host f32 tensor of N(0, 1) samples: element i is counter_normal(seed, stream, i).
Tensor normal_tensor(const Shape& shape, uint64_t seed, uint64_t stream);

}  // namespace orochi
