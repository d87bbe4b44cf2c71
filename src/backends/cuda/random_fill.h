// Fills device memory with counter-based N(mean, std) samples: element i equals (up to the last ulp
// of the device's log/sin/cos) orochi::counter_normal(seed, stream_id, i) from core/random.h, so a
// GPU-initialized random model is the same model as a CPU-initialized one.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// `t` is a contiguous CUDA tensor of f32 or bf16.
Status fill_normal(const Tensor& t, uint64_t seed, uint64_t stream_id, float mean, float stddev,
                   cudaStream_t stream);

}  // namespace orochi::cuda
