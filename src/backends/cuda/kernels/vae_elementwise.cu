// The video VAE decoder's elementwise kernels: SwiGLU in f16, the LayerScale residual into the f32
// stream, the token rows (patches | registers | zero), unpatchify, and the f32 -> f16 cast. Plain
// grid-stride loops: the decoder's time is in its GEMMs and attention, these are bandwidth-bound.
#include <cuda_fp16.h>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;


__global__ void vae_swiglu_kernel(const f16* __restrict__ u, f16* __restrict__ out, int64_t M, int64_t I) {
  for (int64_t i = first_index(); i < M * I; i += grid_stride()) {
    const int64_t m = i / I, c = i % I;
    const float value = __half2float(u[m * 2 * I + c]), gate = __half2float(u[m * 2 * I + I + c]);
    const float activated = __half2float(__float2half_rn(silu_f32(gate)));  // torch's f16 silu output
    out[i] = __float2half_rn(value * activated);
  }
}

__global__ void vae_add_scaled_kernel(float* __restrict__ h, const f16* __restrict__ y,
                                      const float* __restrict__ scale, int64_t n, int64_t C) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    h[i] = __fadd_rn(h[i], __fmul_rn(__half2float(y[i]), scale[i % C]));  // no FMA contraction
}

__global__ void vae_tokens_kernel(const f16* __restrict__ patches, const f16* __restrict__ registers,
                                  float* __restrict__ h, int64_t N, int64_t R, int64_t D) {
  const int64_t n = (N + R + 1) * D;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t row = i / D;
    float v = 0.0f;  // the zero token
    if (row < N)
      v = __half2float(patches[i]);
    else if (row < N + R)
      v = __half2float(registers[i - N * D]);
    h[i] = v;
  }
}

// One thread per output pixel, so the writes are coalesced along the output's last dim.
__global__ void vae_unpatchify_kernel(const f16* __restrict__ patches, float* __restrict__ out, int64_t T,
                                      int64_t H, int64_t W, int64_t ch, int64_t pt, int64_t p) {
  const int64_t F = T * pt, PH = H * p, PW = W * p, n = ch * F * PH * PW;
  const int64_t values = ch * pt * p * p;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t r = i;
    const int64_t ox = r % PW;
    r /= PW;
    const int64_t oy = r % PH;
    r /= PH;
    const int64_t of = r % F;
    const int64_t c = r / F;
    const int64_t t = of / pt, a = of % pt, y = oy / p, b = oy % p, x = ox / p, d = ox % p;
    const int64_t token = (t * H + y) * W + x;
    out[i] = __half2float(patches[token * values + ((c * pt + a) * p + b) * p + d]);
  }
}

__global__ void cast_f32_to_f16_kernel(const float* __restrict__ in, f16* __restrict__ out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __float2half_rn(in[i]);
}

}  // namespace

cudaError_t launch_vae_swiglu(const f16* u, f16* out, int64_t M, int64_t I, cudaStream_t stream) {
  if (M * I == 0) return cudaSuccess;
  vae_swiglu_kernel<<<grid_blocks(M * I), kThreads, 0, stream>>>(u, out, M, I);
  return cudaGetLastError();
}

cudaError_t launch_vae_add_scaled(float* h, const f16* y, const float* scale, int64_t S, int64_t C,
                                  cudaStream_t stream) {
  if (S * C == 0) return cudaSuccess;
  vae_add_scaled_kernel<<<grid_blocks(S * C), kThreads, 0, stream>>>(h, y, scale, S * C, C);
  return cudaGetLastError();
}

cudaError_t launch_vae_tokens(const f16* patches, const f16* registers, float* h, int64_t N, int64_t R, int64_t D,
                              cudaStream_t stream) {
  if (D == 0) return cudaSuccess;
  vae_tokens_kernel<<<grid_blocks((N + R + 1) * D), kThreads, 0, stream>>>(patches, registers, h, N, R, D);
  return cudaGetLastError();
}

cudaError_t launch_vae_unpatchify(const f16* patches, float* out, int64_t T, int64_t H, int64_t W, int64_t ch,
                                  int64_t pt, int64_t p, cudaStream_t stream) {
  const int64_t n = ch * T * pt * H * p * W * p;
  if (n == 0) return cudaSuccess;
  vae_unpatchify_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(patches, out, T, H, W, ch, pt, p);
  return cudaGetLastError();
}

cudaError_t launch_cast_f32_to_f16(const float* in, f16* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cast_f32_to_f16_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
