// The audio decoder's convolution helpers around the f32 GEMMs: stride-1 im2col, the gather half of
// a transposed convolution, the mono output convolution with its clamp, and the AMP residual sums.
// Grid-stride loops with the channel index fastest, so reads and writes are coalesced; all of them
// are bandwidth-bound next to the GEMMs.
#include "backends/cuda/kernels/audio_kernels.h"
#include "backends/cuda/kernels/device_helpers.cuh"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;


__global__ void im2col_kernel(const float* __restrict__ x, float* __restrict__ col, int64_t B, int64_t L, int64_t C,
                              int64_t K, int64_t dilation, int64_t padding, int64_t Lout) {
  const int64_t width = K * C, n = B * Lout * width;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t row = i / width, w = i % width;  // row = b·Lout + t
    const int64_t b = row / Lout, t = row % Lout, k = w / C, c = w % C;
    const int64_t src = t + k * dilation - padding;
    col[i] = (src >= 0 && src < L) ? x[(b * L + src) * C + c] : 0.0f;
  }
}

__global__ void conv_transpose_gather_kernel(const float* __restrict__ z, const float* __restrict__ bias,
                                             float* __restrict__ out, int64_t B, int64_t Lin, int64_t Cout, int64_t K,
                                             int64_t stride, int64_t padding, int64_t Lout) {
  const int64_t n = B * Lout * Cout;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t co = i % Cout, row = i / Cout;
    const int64_t b = row / Lout, t = row % Lout;
    const int64_t full = t + padding;  // position in the uncropped output
    float acc = 0.0f;
    for (int64_t k = full % stride; k < K; k += stride) {
      const int64_t j = (full - k) / stride;
      if (j >= 0 && j < Lin) acc += z[((b * Lin + j) * K + k) * Cout + co];
    }
    out[i] = bias ? acc + bias[co] : acc;
  }
}

__global__ void conv1d_mono_clamp_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ bias, float* __restrict__ out, int64_t B, int64_t L,
                                         int64_t Cin, int64_t K, int64_t padding, int64_t Lout, float lo, float hi) {
  const int64_t n = B * Lout;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t b = i / Lout, t = i % Lout;
    float acc = bias ? bias[0] : 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t src = t + k - padding;
      if (src < 0 || src >= L) continue;
      const float* row = x + (b * L + src) * Cin;
      for (int64_t c = 0; c < Cin; ++c) acc += w[c * K + k] * row[c];
    }
    // torch.clamp keeps NaN (fminf/fmaxf would replace it).
    out[i] = acc != acc ? acc : fminf(fmaxf(acc, lo), hi);
  }
}

__global__ void residual_sum_kernel(float* out, const float* acc, const float* a, const float* __restrict__ b,
                                    float divisor, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = __fadd_rn(a[i], b[i]);
    if (acc) v = __fadd_rn(acc[i], v);
    if (divisor != 1.0f) v = __fdiv_rn(v, divisor);
    out[i] = v;
  }
}

}  // namespace

cudaError_t launch_audio_im2col(const float* x, float* col, int64_t B, int64_t L, int64_t C, int64_t K,
                                int64_t dilation, int64_t padding, cudaStream_t stream) {
  const int64_t Lout = L + 2 * padding - dilation * (K - 1);
  const int64_t n = B * Lout * K * C;
  if (n <= 0) return cudaSuccess;
  im2col_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, col, B, L, C, K, dilation, padding, Lout);
  return cudaGetLastError();
}

cudaError_t launch_audio_conv_transpose_gather(const float* z, const float* bias, float* out, int64_t B, int64_t Lin,
                                               int64_t Cout, int64_t K, int64_t stride, int64_t padding,
                                               int64_t Lout, cudaStream_t stream) {
  const int64_t n = B * Lout * Cout;
  if (n <= 0) return cudaSuccess;
  conv_transpose_gather_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(z, bias, out, B, Lin, Cout, K, stride, padding,
                                                                       Lout);
  return cudaGetLastError();
}

cudaError_t launch_audio_conv1d_mono_clamp(const float* x, const float* w, const float* bias, float* out, int64_t B,
                                           int64_t L, int64_t Cin, int64_t K, int64_t padding, float lo, float hi,
                                           cudaStream_t stream) {
  const int64_t Lout = L + 2 * padding - K + 1;
  const int64_t n = B * Lout;
  if (n <= 0) return cudaSuccess;
  conv1d_mono_clamp_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, w, bias, out, B, L, Cin, K, padding, Lout, lo,
                                                                   hi);
  return cudaGetLastError();
}

cudaError_t launch_audio_residual_sum(float* out, const float* acc, const float* a, const float* b, float divisor,
                                      int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  residual_sum_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(out, acc, a, b, divisor, n);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
