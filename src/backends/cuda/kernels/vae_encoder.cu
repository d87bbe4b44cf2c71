// The video VAE encoder's kernels around cuDNN's convolutions: the padded copy (reflect H/W, causal
// zero frames), the per-frame GroupNorm (+ SiLU) and the residual add. All fp32, [C, T, H, W].
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/vae_encoder.h"

namespace orochi::cuda::kernels {
namespace {

__device__ __forceinline__ int64_t mirror(int64_t i, int64_t n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); }

// One thread per output element; the frame index decides zero or a mirrored read.
__global__ void encoder_pad_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t C, int64_t T,
                                   int64_t H, int64_t W, int64_t front, int64_t top, int64_t left, int64_t Hp,
                                   int64_t Wp) {
  const int64_t Tp = T + front, total = C * Tp * Hp * Wp;
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t j = k % Wp, i = (k / Wp) % Hp, t = (k / (Wp * Hp)) % Tp, c = k / (Wp * Hp * Tp);
    const int64_t ts = t - front;
    y[k] = ts < 0 ? 0.0f : x[((c * T + ts) * H + mirror(i - top, H)) * W + mirror(j - left, W)];
  }
}

// One block per (frame, group): mean, then the centred sum of squares (two passes over the group's
// channels' planes of that frame), then normalize, affine and optionally SiLU.
__global__ void group_norm_frames_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ b, float* __restrict__ y, int64_t T, int64_t HW,
                                         int64_t cg, float eps, bool silu) {
  const int64_t t = blockIdx.x, g = blockIdx.y;
  const int64_t n = cg * HW;
  auto at = [&](int64_t k) { return ((g * cg + k / HW) * T + t) * HW + k % HW; };
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += x[at(k)];
  const float mean = block_sum(sum) / static_cast<float>(n);
  float sq = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float d = x[at(k)] - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum<1>(sq) / static_cast<float>(n) + eps);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const int64_t c = g * cg + k / HW, idx = at(k);
    const float scale = rstd * w[c], shift = b[c] - mean * scale;
    const float v = x[idx] * scale + shift;
    y[idx] = silu ? silu_f32(v) : v;
  }
}

__global__ void add_into_kernel(float* __restrict__ acc, const float* __restrict__ y, int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) acc[k] += y[k];
}

unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 * 32 ? (b < 1 ? 1 : b) : 65535 * 32);
}

}  // namespace

cudaError_t launch_encoder_pad(const float* x, float* y, int64_t C, int64_t T, int64_t H, int64_t W, int64_t front,
                               int64_t top, int64_t bottom, int64_t left, int64_t right, cudaStream_t stream) {
  const int64_t Hp = H + top + bottom, Wp = W + left + right, total = C * (T + front) * Hp * Wp;
  if (total == 0) return cudaSuccess;
  encoder_pad_kernel<<<blocks_for(total, 256), 256, 0, stream>>>(x, y, C, T, H, W, front, top, left, Hp, Wp);
  return cudaGetLastError();
}

cudaError_t launch_group_norm_frames(const float* x, const float* w, const float* b, float* y, int64_t C, int64_t T,
                                     int64_t HW, int64_t groups, float eps, bool silu, cudaStream_t stream) {
  if (C == 0 || T == 0 || HW == 0) return cudaSuccess;
  if (T > kMaxGridX || groups > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(T), static_cast<unsigned>(groups));
  group_norm_frames_kernel<<<grid, 1024, 0, stream>>>(x, w, b, y, T, HW, C / groups, eps, silu);
  return cudaGetLastError();
}

cudaError_t launch_add_into(float* acc, const float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  add_into_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(acc, y, n);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
