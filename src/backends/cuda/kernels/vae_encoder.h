// Launchers of kernels/vae_encoder.cu (raw pointers and sizes; ops_conv3d.cpp checks the tensors).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// y [C, front + T, top + H + bottom, left + W + right] from x [C, T, H, W].
cudaError_t launch_encoder_pad(const float* x, float* y, int64_t C, int64_t T, int64_t H, int64_t W, int64_t front,
                               int64_t top, int64_t bottom, int64_t left, int64_t right, cudaStream_t stream);
// Per-frame GroupNorm (+ SiLU) of x [C, T, HW] into y.
cudaError_t launch_group_norm_frames(const float* x, const float* w, const float* b, float* y, int64_t C, int64_t T,
                                     int64_t HW, int64_t groups, float eps, bool silu, cudaStream_t stream);
cudaError_t launch_add_into(float* acc, const float* y, int64_t n, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
