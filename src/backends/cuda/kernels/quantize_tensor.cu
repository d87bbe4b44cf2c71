// Per-tensor e4m3 quantization with an optional per-column offset (quantize_tensor_kernels.h).
// The amax is a max, order-free, so atomics keep it deterministic; the column means are summed in
// a fixed order (tiles of rows, then tiles) so the GPU's bits are the CPU twin's.
#include <cuda_fp8.h>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/quantize_tensor_kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kVector = 8;           // bf16 values per 16-byte load
constexpr float kE4M3Max = 448.0f;   // core/fp8.h fp8_max(kE4M3)
constexpr float kMinAmax = 1e-12f;   // core/quantize.h kMinAmax

// 8 consecutive values x[i..i+8) minus offset[c..c+8) (offset may be null).
__device__ __forceinline__ void load_offset_values(const bf16* x, const float* offset, int64_t i, int64_t c,
                                                   float (&v)[kVector]) {
  load_bf16<kVector>(x + i, v);
  if (offset) {
#pragma unroll
    for (int j = 0; j < kVector; ++j) v[j] = v[j] - offset[c + j];
  }
}

// Two columns per thread, tile_rows rows per block (blockIdx.y): partial[tile, c] = Σ_rows x[r, c].
__global__ void column_partial_sums_kernel(const bf16* __restrict__ x, int64_t rows, int64_t C, int64_t tile_rows,
                                           float* __restrict__ partial) {
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 2;
  if (c >= C) return;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * tile_rows;
  const int64_t last = first + tile_rows < rows ? first + tile_rows : rows;
  float s0 = 0.0f, s1 = 0.0f;
  for (int64_t r = first; r < last; ++r) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(x + r * C + c));
    s0 += f.x;
    s1 += f.y;
  }
  partial[blockIdx.y * C + c] = s0;
  partial[blockIdx.y * C + c + 1] = s1;
}

__global__ void column_mean_finish_kernel(const float* __restrict__ partial, int64_t tiles, int64_t rows, int64_t C,
                                          float* __restrict__ mean) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sum = 0.0f;
  for (int64_t t = 0; t < tiles; ++t) sum += partial[t * C + c];
  mean[c] = sum / static_cast<float>(rows);
}

// The block's largest value (fmaxf ignores NaN, as the host's std::fmax); thread 0 gets it.
__device__ __forceinline__ float block_max(float v) {
  __shared__ float partial[kThreads / 32];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float m = 0.0f;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, partial[w]);
  return m;
}

__global__ void __launch_bounds__(kThreads) tensor_amax_kernel(const bf16* __restrict__ x, int64_t n, int64_t C,
                                                               const float* __restrict__ offset, float* amax) {
  float m = 0.0f;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVector; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x * kVector) {
    float v[kVector];
    load_offset_values(x, offset, i, i % C, v);
#pragma unroll
    for (int j = 0; j < kVector; ++j) m = fmaxf(m, fabsf(v[j]));
  }
  m = block_max(m);
  // Non-negative floats order as their bit patterns: an unsigned max is the float max.
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(amax), __float_as_uint(m));
}

__global__ void __launch_bounds__(kThreads) encode_tensor_kernel(const bf16* __restrict__ x, int64_t n, int64_t C,
                                                                 const float* __restrict__ offset,
                                                                 const float* __restrict__ amax,
                                                                 uint8_t* __restrict__ codes, float* scale) {
  const float a = fmaxf(*amax, kMinAmax);
  const float inverse = kE4M3Max / a;  // IEEE division (no fast-math), as the host's row_scale
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = a / kE4M3Max;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVector; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x * kVector) {
    float v[kVector];
    load_offset_values(x, offset, i, i % C, v);
    uint32_t word[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < kVector; ++j)
      word[j / 4] |= static_cast<uint32_t>(__nv_cvt_float_to_fp8(v[j] * inverse, __NV_SATFINITE, __NV_E4M3))
                     << (8 * (j % 4));
    *reinterpret_cast<uint2*>(codes + i) = make_uint2(word[0], word[1]);
  }
}

__global__ void __launch_bounds__(kThreads) decode_tensor_kernel(const uint8_t* __restrict__ codes, int64_t n,
                                                                 const float* __restrict__ scale,
                                                                 bf16* __restrict__ y) {
  const float s = *scale;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVector; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x * kVector) {
    const uint2 raw = *reinterpret_cast<const uint2*>(codes + i);
    float v[kVector];
#pragma unroll
    for (int j = 0; j < kVector; ++j) {
      const uint32_t word = j < 4 ? raw.x : raw.y;
      const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>((word >> (8 * (j % 4))) & 0xffu),
                                                   __NV_E4M3);
      v[j] = __half2float(__half(h)) * s;  // e4m3 -> f16 is exact
    }
    store_bf16<kVector>(y + i, v);
  }
}

__global__ void attention_fp8_scales_kernel(const float* v_amax, bool fp8_output, float* descale_s, float* scale_s,
                                            float* scale_o, float* descale_o) {
  const float p = fmaxf(1.0f, kMinAmax);  // core's kAttentionPAmax
  *descale_s = p / kE4M3Max;
  *scale_s = kE4M3Max / p;
  if (fp8_output) {
    const float o = fmaxf(2.0f * *v_amax, kMinAmax);  // core's attention_output_amax
    *scale_o = kE4M3Max / o;
    *descale_o = o / kE4M3Max;
  } else {
    *scale_o = 1.0f;
    *descale_o = 1.0f;
  }
}

// Enough blocks to fill the GPU for a grid-stride loop over n values, 8 per thread.
unsigned int stride_blocks(int64_t n) {
  const int64_t per_block = static_cast<int64_t>(kThreads) * kVector;
  const int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

cudaError_t launch_column_means_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, int64_t tile_rows,
                                     float* partial, float* mean, cudaStream_t stream) {
  if (rows <= 0 || C <= 0 || C % kVector != 0 || tile_rows <= 0 || !aligned16(x)) return cudaErrorInvalidValue;
  const int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  if (tiles > 65535) return cudaErrorInvalidValue;
  constexpr int kColumnThreads = 128;
  const dim3 grid(static_cast<unsigned int>((C / 2 + kColumnThreads - 1) / kColumnThreads),
                  static_cast<unsigned int>(tiles));
  column_partial_sums_kernel<<<grid, kColumnThreads, 0, stream>>>(x, rows, C, tile_rows, partial);
  column_mean_finish_kernel<<<static_cast<unsigned int>((C + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      partial, tiles, rows, C, mean);
  return cudaGetLastError();
}

cudaError_t launch_tensor_amax_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, const float* offset,
                                    float* amax, cudaStream_t stream) {
  if (rows <= 0 || C <= 0 || C % kVector != 0 || !aligned16(x)) return cudaErrorInvalidValue;
  const cudaError_t zeroed = cudaMemsetAsync(amax, 0, sizeof(float), stream);
  if (zeroed != cudaSuccess) return zeroed;
  tensor_amax_kernel<<<stride_blocks(rows * C), kThreads, 0, stream>>>(x, rows * C, C, offset, amax);
  return cudaGetLastError();
}

cudaError_t launch_encode_tensor_e4m3_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, const float* offset,
                                           const float* amax, uint8_t* codes, float* scale, cudaStream_t stream) {
  if (rows <= 0 || C <= 0 || C % kVector != 0 || !aligned16(x) || !aligned16(codes)) return cudaErrorInvalidValue;
  encode_tensor_kernel<<<stride_blocks(rows * C), kThreads, 0, stream>>>(x, rows * C, C, offset, amax, codes, scale);
  return cudaGetLastError();
}

cudaError_t launch_decode_tensor_e4m3_to_bf16(const uint8_t* codes, int64_t n, const float* scale,
                                              __nv_bfloat16* y, cudaStream_t stream) {
  if (n <= 0 || n % kVector != 0 || !aligned16(codes) || !aligned16(y)) return cudaErrorInvalidValue;
  decode_tensor_kernel<<<stride_blocks(n), kThreads, 0, stream>>>(codes, n, scale, y);
  return cudaGetLastError();
}

cudaError_t launch_attention_fp8_scales(const float* v_amax, bool fp8_output, float* descale_s, float* scale_s,
                                        float* scale_o, float* descale_o, cudaStream_t stream) {
  attention_fp8_scales_kernel<<<1, 1, 0, stream>>>(v_amax, fp8_output, descale_s, scale_s, scale_o, descale_o);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
