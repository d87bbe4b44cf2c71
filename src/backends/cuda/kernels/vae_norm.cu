// The video VAE decoder's norms: RMSNorm and LayerNorm of the f32 residual stream with an f16 output
// (the next linear's operand under fp16 autocast), and the per-head q/k RMSNorm fused with RoPE on
// f16 heads. One block per row for the stream norms (C = 2048 in the release), one warp per
// (row, head) for q/k.
#include <cuda_fp16.h>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float round_f16(float v) { return __half2float(__float2half_rn(v)); }

// The row is read twice (statistics, then normalize); the second read hits L1/L2.
__global__ void vae_rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, f16* __restrict__ y,
                                    int64_t C, float eps) {
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * C;
  f16* yr = y + static_cast<int64_t>(blockIdx.x) * C;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += xr[c] * xr[c];
  const float inv = rsqrtf(block_sum(sum) / static_cast<float>(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) yr[c] = __float2half_rn(xr[c] * inv * w[c]);
}

// Two-pass statistics (mean, then the centred sum of squares) as a numerically safe LayerNorm.
__global__ void vae_layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ b, f16* __restrict__ y, int64_t C, float eps) {
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * C;
  f16* yr = y + static_cast<int64_t>(blockIdx.x) * C;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += xr[c];
  const float mean = block_sum(sum) / static_cast<float>(C);
  float sq = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = xr[c] - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(block_sum<1>(sq) / static_cast<float>(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) yr[c] = __float2half_rn((xr[c] - mean) * inv * w[c] + b[c]);
}

__global__ void vae_qk_norm_rope_kernel(f16* __restrict__ x, int64_t rows, int64_t heads, int D, float eps,
                                        const f16* __restrict__ cos, const f16* __restrict__ sin, int R) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together: the shuffles below stay full-warp
  f16* xr = x + row * D;
  const int64_t s = row / heads;
  float sum = 0.0f;
  for (int c = lane; c < D; c += 32) {
    const float v = __half2float(xr[c]);
    sum += v * v;
  }
  // The shuffles also order every lane's reads above before any lane's writes below.
  const float inv = rsqrtf(warp_sum(sum) / static_cast<float>(D) + eps);
  auto normed = [&](int c) { return round_f16(__half2float(xr[c]) * inv); };
  // Each lane owns the pairs (p, p + R/2) it writes: a pair is read and written by one thread.
  const int half = R / 2;
  for (int p = lane; p < half; p += 32) {
    const float a = normed(p), bv = normed(p + half);
    const f16* cr = cos + s * R;
    const f16* sr = sin + s * R;
    xr[p] = __float2half_rn(round_f16(a * __half2float(cr[p])) - round_f16(bv * __half2float(sr[p])));
    xr[p + half] =
        __float2half_rn(round_f16(bv * __half2float(cr[p + half])) + round_f16(a * __half2float(sr[p + half])));
  }
  for (int c = R + lane; c < D; c += 32) xr[c] = __float2half_rn(normed(c));
}

}  // namespace

cudaError_t launch_vae_rms_norm(const float* x, const float* w, f16* y, int64_t rows, int64_t C, float eps,
                                cudaStream_t stream) {
  if (rows == 0 || C == 0) return cudaSuccess;
  if (rows > kMaxGridX) return cudaErrorInvalidConfiguration;  // one block per row
  vae_rms_norm_kernel<<<static_cast<unsigned>(rows), row_threads(C), 0, stream>>>(x, w, y, C, eps);
  return cudaGetLastError();
}

cudaError_t launch_vae_layer_norm(const float* x, const float* w, const float* b, f16* y, int64_t rows, int64_t C,
                                  float eps, cudaStream_t stream) {
  if (rows == 0 || C == 0) return cudaSuccess;
  if (rows > kMaxGridX) return cudaErrorInvalidConfiguration;
  vae_layer_norm_kernel<<<static_cast<unsigned>(rows), row_threads(C), 0, stream>>>(x, w, b, y, C, eps);
  return cudaGetLastError();
}

cudaError_t launch_vae_qk_norm_rope(f16* x, int64_t S, int64_t heads, int64_t D, float eps, const f16* cos,
                                    const f16* sin, int64_t R, cudaStream_t stream) {
  const int64_t rows = S * heads;
  if (rows == 0 || D == 0) return cudaSuccess;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > kMaxGridX) return cudaErrorInvalidConfiguration;
  vae_qk_norm_rope_kernel<<<static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, 0, stream>>>(
      x, rows, heads, static_cast<int>(D), eps, cos, sin, static_cast<int>(R));
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
