// The Qwen3-VL vision tower's kernels: bf16 LayerNorm with bias (one block per row), GELU (tanh or
// erf), the q/k/v split with the 2-D RoPE in fp32 (one thread per rotated pair), and the
// interpolated position embeddings added to the patch embeddings (one thread per value).
#include "backends/cuda/kernels/device_helpers.cuh"
#include "models/qwen3vl/cuda/vision_kernels.h"

namespace orochi::qwen3vl::gpu::kernels {
namespace {

using orochi::cuda::kernels::block_sum;
using orochi::cuda::kernels::first_index;
using orochi::cuda::kernels::grid_blocks;
using orochi::cuda::kernels::grid_stride;
using orochi::cuda::kernels::row_threads;

// Two-pass statistics in fp32 (mean, then the centred sum of squares), one rounding at the output,
// as torch's CUDA LayerNorm on bf16 (fp32 accumulation, gamma/beta widened).
__global__ void layer_norm_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ b,
                                  bf16* __restrict__ y, int64_t C, float eps) {
  const bf16* xr = x + static_cast<int64_t>(blockIdx.x) * C;
  bf16* yr = y + static_cast<int64_t>(blockIdx.x) * C;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += __bfloat162float(xr[c]);
  const float mean = block_sum(sum) / static_cast<float>(C);
  float sq = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = __bfloat162float(xr[c]) - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(block_sum<1>(sq) / static_cast<float>(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    yr[c] = __float2bfloat16_rn((__bfloat162float(xr[c]) - mean) * inv * __bfloat162float(w[c]) +
                                __bfloat162float(b[c]));
}

template <bool kTanh>
__global__ void gelu_kernel(bf16* __restrict__ x, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = __bfloat162float(x[i]);
    float g;
    if constexpr (kTanh) {
      const float beta = 0.7978845608028654f;  // sqrt(2 / pi)
      const float inner = beta * (v + 0.044715f * (v * v * v));
      g = 0.5f * v * (1.0f + tanhf(inner));
    } else {
      g = v * 0.5f * (1.0f + erff(v * 0.70710678118654752f));
    }
    x[i] = __float2bfloat16_rn(g);
  }
}

// One thread per (row, head, pair i < D/2): writes q and k at i and i + D/2, and v at both.
// Separate multiplies and an add (no fused multiply-add), as torch's three elementwise fp32 ops.
__global__ void qkv_split_rope_kernel(const bf16* __restrict__ qkv, const float* __restrict__ cos,
                                      const float* __restrict__ sin, bf16* __restrict__ q, bf16* __restrict__ k,
                                      bf16* __restrict__ v, int64_t S, int64_t heads, int64_t D) {
  const int64_t half = D / 2, total = S * heads * half;
  for (int64_t t = first_index(); t < total; t += grid_stride()) {
    const int64_t i = t % half, sh = t / half, s = sh / heads, h = sh % heads;
    const float* c = cos + s * D;
    const float* sn = sin + s * D;
    const bf16* row = qkv + s * 3 * heads * D;
    const int64_t out = (s * heads + h) * D;
    const bf16* parts[2] = {row + h * D, row + (heads + h) * D};
    bf16* dst[2] = {q + out, k + out};
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const float x1 = __bfloat162float(parts[p][i]), x2 = __bfloat162float(parts[p][i + half]);
      dst[p][i] = __float2bfloat16_rn(__fadd_rn(__fmul_rn(x1, c[i]), __fmul_rn(-x2, sn[i])));
      dst[p][i + half] = __float2bfloat16_rn(__fadd_rn(__fmul_rn(x2, c[i + half]), __fmul_rn(x1, sn[i + half])));
    }
    const bf16* vr = row + (2 * heads + h) * D;
    v[out + i] = vr[i];
    v[out + i + half] = vr[i + half];
  }
}

__global__ void add_position_embeddings_kernel(bf16* __restrict__ x, const bf16* __restrict__ table,
                                               const int64_t* __restrict__ index, const float* __restrict__ weight,
                                               int64_t N, int64_t C) {
  for (int64_t t = first_index(); t < N * C; t += grid_stride()) {
    const int64_t n = t / C, c = t % C;
    float pe = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      pe = __fadd_rn(pe, __fmul_rn(__bfloat162float(table[index[4 * n + j] * C + c]), weight[4 * n + j]));
    const float pe_bf16 = __bfloat162float(__float2bfloat16_rn(pe));
    x[t] = __float2bfloat16_rn(__bfloat162float(x[t]) + pe_bf16);
  }
}

}  // namespace

cudaError_t launch_layer_norm(const bf16* x, const bf16* w, const bf16* b, bf16* y, int64_t rows, int64_t C, float eps,
                              cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  layer_norm_kernel<<<static_cast<unsigned>(rows), row_threads(C), 0, stream>>>(x, w, b, y, C, eps);
  return cudaGetLastError();
}

cudaError_t launch_gelu(bf16* x, int64_t n, bool tanh_approximation, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (tanh_approximation)
    gelu_kernel<true><<<grid_blocks(n), 256, 0, stream>>>(x, n);
  else
    gelu_kernel<false><<<grid_blocks(n), 256, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t launch_qkv_split_rope(const bf16* qkv, const float* cos, const float* sin, bf16* q, bf16* k, bf16* v,
                                  int64_t S, int64_t heads, int64_t D, cudaStream_t stream) {
  const int64_t total = S * heads * (D / 2);
  if (total == 0) return cudaSuccess;
  qkv_split_rope_kernel<<<grid_blocks(total), 256, 0, stream>>>(qkv, cos, sin, q, k, v, S, heads, D);
  return cudaGetLastError();
}

cudaError_t launch_add_position_embeddings(bf16* x, const bf16* table, const int64_t* index, const float* weight,
                                           int64_t N, int64_t C, cudaStream_t stream) {
  if (N * C == 0) return cudaSuccess;
  add_position_embeddings_kernel<<<grid_blocks(N * C), 256, 0, stream>>>(x, table, index, weight, N, C);
  return cudaGetLastError();
}

}  // namespace orochi::qwen3vl::gpu::kernels
