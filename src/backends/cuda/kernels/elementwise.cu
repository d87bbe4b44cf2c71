// Elementwise kernels: SwiGLU, gated residual, add, dtype casts, over vectors of V elements (V = 8:
// 16-byte bf16 accesses; V = 1: the scalar fallback). SwiGLU and the gated residual tile rows, and a
// vector never crosses a row (the launchers pick V = 8 only when the row width is a multiple of 8);
// the flat ones are grid-stride loops.
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t first_unit() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t unit_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Row-tiled kernels: blockIdx.y picks kTileThreads vectors of a row, blockIdx.x walks the rows. No
// 64-bit division per element, which cost the grid-stride SwiGLU a good part of its time. (A row of
// more than 65535 tiles is an invalid launch configuration, which the launcher returns.)
constexpr unsigned kTileThreads = 128;
inline dim3 row_tiles(int64_t rows, int64_t units_per_row) {
  const int64_t tiles = (units_per_row + kTileThreads - 1) / kTileThreads;
  const int64_t row_blocks = rows < 8192 ? rows : 8192;  // enough blocks to fill the GPU many times over
  return dim3(static_cast<unsigned>(row_blocks), static_cast<unsigned>(tiles));
}
__device__ __forceinline__ int64_t row_tile_column(int V) {
  return (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * V;
}

// out [M, I] = value * silu(gate) of u [M, 2I] = [value | gate], rounded like PyTorch's two ops.
template <int V>
__global__ void swiglu_kernel(const bf16* __restrict__ u, bf16* __restrict__ out, int64_t M, int64_t I) {
  const int64_t i = row_tile_column(V);
  if (i >= I) return;
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    float value[V], gate[V];
    load_bf16<V>(u + r * 2 * I + i, value);
    load_bf16<V>(u + r * 2 * I + I + i, gate);
#pragma unroll
    for (int j = 0; j < V; ++j) value[j] *= round_bf16(silu_f32(gate[j]));
    store_bf16<V>(out + r * I + i, value);
  }
}

// h [S, C] += gate[idx[r]] * y, the product rounded to bf16 first (PyTorch's two ops).
template <int V>
__global__ void gated_residual_kernel(bf16* __restrict__ h, const bf16* __restrict__ gate, int64_t gate_stride,
                                      const int64_t* __restrict__ idx, const bf16* __restrict__ y, int64_t S,
                                      int64_t C) {
  const int64_t c = row_tile_column(V);
  if (c >= C) return;
  for (int64_t r = blockIdx.x; r < S; r += gridDim.x) {
    const int64_t e = r * C + c;
    float hv[V], g[V], yv[V];
    load_bf16<V>(h + e, hv);
    load_bf16<V>(gate + idx[r] * gate_stride + c, g);
    load_bf16<V>(y + e, yv);
#pragma unroll
    for (int j = 0; j < V; ++j) hv[j] += round_bf16(g[j] * yv[j]);
    store_bf16<V>(h + e, hv);
  }
}

template <int V>
__global__ void add_kernel(bf16* __restrict__ h, const bf16* __restrict__ y, int64_t n) {
  for (int64_t k = first_unit(); k < n / V; k += unit_stride()) {
    float hv[V], yv[V];
    load_bf16<V>(h + k * V, hv);
    load_bf16<V>(y + k * V, yv);
#pragma unroll
    for (int j = 0; j < V; ++j) hv[j] += yv[j];
    store_bf16<V>(h + k * V, hv);
  }
}

template <int V>
__global__ void f32_to_bf16_kernel(const float* __restrict__ in, bf16* __restrict__ out, int64_t n) {
  for (int64_t k = first_unit(); k < n / V; k += unit_stride()) {
    float v[V];
    if constexpr (V == 8) {
      const float4 a = reinterpret_cast<const float4*>(in)[2 * k], b = reinterpret_cast<const float4*>(in)[2 * k + 1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = in[k * V + j];
    }
    store_bf16<V>(out + k * V, v);
  }
}

template <int V>
__global__ void bf16_to_f32_kernel(const bf16* __restrict__ in, float* __restrict__ out, int64_t n) {
  for (int64_t k = first_unit(); k < n / V; k += unit_stride()) {
    float v[V];
    load_bf16<V>(in + k * V, v);
    if constexpr (V == 8) {
      reinterpret_cast<float4*>(out)[2 * k] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(out)[2 * k + 1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) out[k * V + j] = v[j];
    }
  }
}

}  // namespace

cudaError_t launch_swiglu(const bf16* u, bf16* out, int64_t M, int64_t I, cudaStream_t stream) {
  if (M * I == 0) return cudaSuccess;
  if (I % 8 == 0 && aligned16(u) && aligned16(out))
    swiglu_kernel<8><<<row_tiles(M, I / 8), kTileThreads, 0, stream>>>(u, out, M, I);
  else
    swiglu_kernel<1><<<row_tiles(M, I), kTileThreads, 0, stream>>>(u, out, M, I);
  return cudaGetLastError();
}

cudaError_t launch_gated_residual(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                  const bf16* y, int64_t S, int64_t C, cudaStream_t stream) {
  if (S * C == 0) return cudaSuccess;
  if (C % 8 == 0 && gate_stride % 8 == 0 && aligned16(h) && aligned16(gate) && aligned16(y))
    gated_residual_kernel<8><<<row_tiles(S, C / 8), kTileThreads, 0, stream>>>(h, gate, gate_stride, idx, y, S, C);
  else
    gated_residual_kernel<1><<<row_tiles(S, C), kTileThreads, 0, stream>>>(h, gate, gate_stride, idx, y, S, C);
  return cudaGetLastError();
}

cudaError_t launch_add(bf16* h, const bf16* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n % 8 == 0 && aligned16(h) && aligned16(y))
    add_kernel<8><<<grid_blocks(n / 8), kThreads, 0, stream>>>(h, y, n);
  else
    add_kernel<1><<<grid_blocks(n), kThreads, 0, stream>>>(h, y, n);
  return cudaGetLastError();
}

cudaError_t launch_cast_f32_to_bf16(const float* in, bf16* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n % 8 == 0 && aligned16(in) && aligned16(out))
    f32_to_bf16_kernel<8><<<grid_blocks(n / 8), kThreads, 0, stream>>>(in, out, n);
  else
    f32_to_bf16_kernel<1><<<grid_blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_cast_bf16_to_f32(const bf16* in, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n % 8 == 0 && aligned16(in) && aligned16(out))
    bf16_to_f32_kernel<8><<<grid_blocks(n / 8), kThreads, 0, stream>>>(in, out, n);
  else
    bf16_to_f32_kernel<1><<<grid_blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
