// Launchers of the audio VAE decoder's CUDA kernels (audio_snake.cu, audio_conv.cu): raw pointers,
// shapes and a stream, no framework types (ops_audio.h wraps them on Tensors). Each returns the
// launch's cudaGetLastError().
// Signals are f32 and time-major, [B, L, C] ("audio rows"): a time step's channels are adjacent, so
// the convolutions become GEMMs over rows and every kernel reads and writes channel-coalesced.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// Taps and ratio of the alias-free activation's low-pass filters (BigVGAN's Activation1d).
inline constexpr int kAudioFilterTaps = 12;
inline constexpr int kAudioFilterRatio = 2;

// Alias-free SnakeBeta in one pass: upsample 2x (replicate pad, 12-tap transposed FIR, times 2),
// y = u + sin²(e^log_alpha · u) / (e^log_beta + 1e-9), downsample 2x (replicate pad, 12-tap FIR,
// stride 2). x, out [B, L, C] (out must not alias x); log_alpha, log_beta [C]; filters [12].
cudaError_t launch_audio_alias_free_snake(const float* x, const float* log_alpha, const float* log_beta,
                                          const float* up_filter, const float* down_filter, float* out, int64_t B,
                                          int64_t L, int64_t C, cudaStream_t stream);

// Stride-1 im2col with zero padding: col[b, t, k·C + c] = x[b, t + k·dilation − padding, c] (0
// outside [0, L)). x [B, L, C] -> col [B, Lout, K·C], Lout = L + 2·padding − dilation·(K − 1).
cudaError_t launch_audio_im2col(const float* x, float* col, int64_t B, int64_t L, int64_t C, int64_t K,
                                int64_t dilation, int64_t padding, cudaStream_t stream);

// The gather half of a transposed convolution: z [B, Lin, K·Cout] holds input j's contribution to
// full-output position j·stride + k; out[b, t, co] = bias[co] + Σ_k z[b, (t + padding − k)/stride, k·Cout + co]
// over the k with t + padding − k a multiple of stride landing inside [0, Lin).
// out [B, Lout, Cout], Lout = (Lin − 1)·stride − 2·padding + K. bias may be null.
cudaError_t launch_audio_conv_transpose_gather(const float* z, const float* bias, float* out, int64_t B, int64_t Lin,
                                               int64_t Cout, int64_t K, int64_t stride, int64_t padding,
                                               int64_t Lout, cudaStream_t stream);

// A convolution to one output channel, then a clamp that keeps NaN: x [B, L, Cin], w [Cin, K]
// (a [1, Cin, K] Conv1d weight), bias null or [1] -> out [B, Lout], Lout = L + 2·padding − K + 1.
cudaError_t launch_audio_conv1d_mono_clamp(const float* x, const float* w, const float* bias, float* out, int64_t B,
                                           int64_t L, int64_t Cin, int64_t K, int64_t padding, float lo, float hi,
                                           cudaStream_t stream);

// out[i] = ((acc ? acc[i] + (a[i] + b[i]) : a[i] + b[i])) / divisor over n elements, each add and
// the division rounded once (the CPU decoder's order). out may alias acc or a.
cudaError_t launch_audio_residual_sum(float* out, const float* acc, const float* a, const float* b, float divisor,
                                      int64_t n, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
