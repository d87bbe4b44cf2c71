// Launcher of kernels/lora_merge.cu (raw pointers and sizes; ops_lora.cpp checks the tensors).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// w [O, I] (bf16 when `bf16`, else f32) = w + s · (up [O, r] · down [r, I]) with f32 factors; every
// sum in the CPU merge's order and roundings (h3::merge_lora): bit-identical to it.
cudaError_t launch_lora_merge(void* w, bool bf16, const float* up, const float* down, int64_t O, int64_t I, int64_t r,
                              float s, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
