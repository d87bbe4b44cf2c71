// Launchers of kernels/vae_encoder.cu (raw pointers and sizes; ops_conv3d.cpp checks the tensors).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
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

namespace orochi::cuda::kernels {

// The layout-aware kernels of the fused encoder path (ops_conv3d.h, VideoLayout). Element counts
// below 2^31 (the callers check): indices are 32-bit inside the kernels.

// y [Co, front + T, top + H + bottom, left + W + right] in `out_channels_last` layout from x [C, T, H, W]
// in `in_channels_last` layout, (x + bias[c]) where bias is given, reflect H/W, zero front frames,
// zero channels c >= C (Co >= C).
cudaError_t launch_encoder_pad_to(const float* x, bool in_channels_last, const float* bias, float* y,
                                  bool out_channels_last, int64_t C, int64_t Co, int64_t T, int64_t H, int64_t W,
                                  int64_t front, int64_t top, int64_t bottom, int64_t left, int64_t right,
                                  cudaStream_t stream);
// As launch_encoder_pad_to, reading x through the window rows y0 + [0, H), columns x0 + [0, W) of its
// Hs x Ws frames (the reflect mirrors inside the window).
cudaError_t launch_encoder_window_pad(const float* x, bool in_channels_last, const float* bias, float* y,
                                      bool out_channels_last, int64_t C, int64_t Co, int64_t T, int64_t Hs, int64_t Ws,
                                      int64_t y0, int64_t x0, int64_t H, int64_t W, int64_t front, int64_t top,
                                      int64_t bottom, int64_t left, int64_t right, cudaStream_t stream);
// Per-frame GroupNorm (+ SiLU) of (x + in_bias[c]) (in_bias may be null), x [C, T, H, W], written into
// the interior of y [C, front + T, H + 2·pad, W + 2·pad] (same layout) with the reflect border of
// `pad` (0 or 1) filled from the same values; the front frames are the caller's (left untouched).
// Channels last with `scratch` of group_norm_pad_scratch_bytes() (and C dividing 1024, groups of a
// multiple of 4 channels, 16-byte aligned x and y) it takes the coalesced three-kernel path;
// otherwise one block per (group, frame).
cudaError_t launch_group_norm_pad(const float* x, const float* in_bias, const float* w, const float* b, float* y,
                                  bool channels_last, int64_t C, int64_t T, int64_t H, int64_t W, int64_t groups,
                                  float eps, bool silu, int64_t front, int64_t pad, void* scratch, size_t scratch_bytes,
                                  cudaStream_t stream);
// The scratch the coalesced path needs (per-chunk partial moments and per-(frame, group) statistics).
size_t group_norm_pad_scratch_bytes(bool channels_last, int64_t C, int64_t T, int64_t H, int64_t W, int64_t groups);
// out = (a + a_bias[c]) + (y + y_bias[c]) elementwise over [C, T, H, W] in either layout; a_bias,
// y and y_bias may be null (then left out of the sum). out may be a.
cudaError_t launch_bias_residual(const float* a, const float* a_bias, const float* y, const float* y_bias,
                                 float* out, bool channels_last, int64_t C, int64_t n, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
