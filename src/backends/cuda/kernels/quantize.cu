// Quantization kernels: per-row scales and codes (one block per row: the row's amax, then its codes
// from a second read, which hits L2), elementwise format conversions, and the dequantizing epilogue
// of a quantized GEMM. The rounding is the hardware's (cvt.rn.satfinite.{e4m3,e5m2}x2.f32 on sm_89+,
// cvt.rni.s32.f32), which core/fp8.h reproduces on the host.
#include "backends/cuda/kernels/quantize_device.cuh"

namespace orochi::cuda::kernels {
namespace {

constexpr int kRowThreads = 256;

// V consecutive inputs as f32: bf16 V == 8 and f32 V == 4 are one 16-byte load.
template <int V>
__device__ __forceinline__ void load_values(const bf16* p, float (&v)[V]) {
  load_bf16<V>(p, v);
}
template <int V>
__device__ __forceinline__ void load_values(const float* p, float (&v)[V]) {
  if constexpr (V == 4) {
    const float4 f = *reinterpret_cast<const float4*>(p);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = p[i];
  }
}

// x [rows, C] -> codes [rows, C], scales [rows]; a block per row (grid-stride over rows).
template <typename T, int V, QuantCode Code>
__global__ void __launch_bounds__(kRowThreads) quantize_rows_kernel(const T* __restrict__ x, int64_t rows, int64_t C,
                                                                    uint8_t* __restrict__ codes,
                                                                    float* __restrict__ scales) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * C;
    float amax = 0.0f;
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < C; c += static_cast<int64_t>(blockDim.x) * V) {
      float v[V];
      load_values<V>(xr + c, v);
#pragma unroll
      for (int j = 0; j < V; ++j) amax = fmaxf(amax, fabsf(v[j]));
    }
    const RowScale rs = row_scale<Code>(block_max(amax));
    if (threadIdx.x == 0) scales[r] = rs.scale;
    uint8_t* cr = codes + r * C;
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < C; c += static_cast<int64_t>(blockDim.x) * V) {
      float v[V];
      load_values<V>(xr + c, v);
      store_encoded<Code, V>(cr + c, v, rs.inverse);
    }
    __syncthreads();  // the next row's block_max reuses the shared partials
  }
}

inline unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows < 65535 ? rows : 65535); }

template <typename T, int VecWidth, QuantCode Code>
void launch_rows(const T* x, int64_t rows, int64_t C, uint8_t* codes, float* scales, cudaStream_t stream) {
  const bool vector = C % VecWidth == 0 && aligned16(x) && reinterpret_cast<uintptr_t>(codes) % VecWidth == 0;
  if (vector)
    quantize_rows_kernel<T, VecWidth, Code><<<row_blocks(rows), kRowThreads, 0, stream>>>(x, rows, C, codes, scales);
  else
    quantize_rows_kernel<T, 1, Code><<<row_blocks(rows), kRowThreads, 0, stream>>>(x, rows, C, codes, scales);
}

template <typename T, int VecWidth>
cudaError_t launch_rows_any(const T* x, int64_t rows, int64_t C, QuantCode code, uint8_t* codes, float* scales,
                            cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  switch (code) {
    case QuantCode::kE4M3: launch_rows<T, VecWidth, QuantCode::kE4M3>(x, rows, C, codes, scales, stream); break;
    case QuantCode::kI8: launch_rows<T, VecWidth, QuantCode::kI8>(x, rows, C, codes, scales, stream); break;
    default: return cudaErrorInvalidValue;  // row scales are defined for e4m3 and int8 (core/quantize.h)
  }
  return cudaGetLastError();
}

template <QuantCode Code>
__global__ void encode_kernel(const float* __restrict__ in, uint8_t* __restrict__ out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = encode_code<Code>(in[i]);
}

template <QuantCode Code>
__global__ void decode_kernel(const uint8_t* __restrict__ in, float* __restrict__ out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    if constexpr (Code == QuantCode::kI8) {
      out[i] = static_cast<float>(static_cast<int8_t>(in[i]));
    } else {
      const __half_raw h = __nv_cvt_fp8_to_halfraw(in[i], Code == QuantCode::kE4M3 ? __NV_E4M3 : __NV_E5M2);
      out[i] = __half2float(__half(h));
    }
  }
}

__device__ __forceinline__ float accumulator_value(int32_t a) { return __int2float_rn(a); }
__device__ __forceinline__ float accumulator_value(float a) { return a; }

// y[m, n] = bf16(fma(acc[m, n], x_scale[m] · w_scale[n], bias[n])): blockIdx.y picks V · 128
// columns, blockIdx.x walks the rows.
constexpr unsigned kEpilogueThreads = 128;
template <typename Acc, int V>
__global__ void __launch_bounds__(kEpilogueThreads)
    dequantize_kernel(const Acc* __restrict__ acc, const float* __restrict__ x_scale, const float* __restrict__ w_scale,
                      const bf16* __restrict__ bias, bf16* __restrict__ y, int64_t M, int64_t N) {
  const int64_t n = (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * V;
  if (n >= N) return;
  float ws[V], b[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    ws[j] = w_scale[n + j];
    b[j] = bias ? __bfloat162float(bias[n + j]) : 0.0f;
  }
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const float xs = x_scale[m];
    const Acc* a = acc + m * N + n;
    alignas(16) Acc av[V];
    if constexpr (V == 4) {
      *reinterpret_cast<int4*>(av) = *reinterpret_cast<const int4*>(a);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) av[j] = a[j];
    }
    float out[V];
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = __fmaf_rn(accumulator_value(av[j]), __fmul_rn(xs, ws[j]), b[j]);
    bf16* yr = y + m * N + n;
    if constexpr (V == 4) {
      uint2 raw;
      __nv_bfloat162* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
      pairs[0] = __floats2bfloat162_rn(out[0], out[1]);
      pairs[1] = __floats2bfloat162_rn(out[2], out[3]);
      *reinterpret_cast<uint2*>(yr) = raw;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) yr[j] = __float2bfloat16_rn(out[j]);
    }
  }
}

template <typename Acc>
cudaError_t launch_dequantize(const Acc* acc, const float* x_scale, const float* w_scale, const bf16* bias, bf16* y,
                              int64_t M, int64_t N, cudaStream_t stream) {
  if (M == 0 || N == 0) return cudaSuccess;
  const bool vector = N % 4 == 0 && aligned16(acc) && reinterpret_cast<uintptr_t>(y) % 8 == 0;
  const int V = vector ? 4 : 1;
  const int64_t tiles = (N / V + kEpilogueThreads - 1) / kEpilogueThreads;
  if (tiles > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(M < 8192 ? M : 8192), static_cast<unsigned>(tiles));
  if (vector)
    dequantize_kernel<Acc, 4><<<grid, kEpilogueThreads, 0, stream>>>(acc, x_scale, w_scale, bias, y, M, N);
  else
    dequantize_kernel<Acc, 1><<<grid, kEpilogueThreads, 0, stream>>>(acc, x_scale, w_scale, bias, y, M, N);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_quantize_rows_bf16(const bf16* x, int64_t rows, int64_t C, QuantCode code, uint8_t* codes,
                                      float* scales, cudaStream_t stream) {
  return launch_rows_any<bf16, 8>(x, rows, C, code, codes, scales, stream);
}

cudaError_t launch_quantize_rows_f32(const float* x, int64_t rows, int64_t C, QuantCode code, uint8_t* codes,
                                     float* scales, cudaStream_t stream) {
  return launch_rows_any<float, 4>(x, rows, C, code, codes, scales, stream);
}

cudaError_t launch_encode_f32(const float* in, uint8_t* out, int64_t n, QuantCode code, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const unsigned blocks = grid_blocks(n);
  switch (code) {
    case QuantCode::kE4M3: encode_kernel<QuantCode::kE4M3><<<blocks, 256, 0, stream>>>(in, out, n); break;
    case QuantCode::kE5M2: encode_kernel<QuantCode::kE5M2><<<blocks, 256, 0, stream>>>(in, out, n); break;
    case QuantCode::kI8: encode_kernel<QuantCode::kI8><<<blocks, 256, 0, stream>>>(in, out, n); break;
  }
  return cudaGetLastError();
}

cudaError_t launch_decode_to_f32(const uint8_t* in, float* out, int64_t n, QuantCode code, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const unsigned blocks = grid_blocks(n);
  switch (code) {
    case QuantCode::kE4M3: decode_kernel<QuantCode::kE4M3><<<blocks, 256, 0, stream>>>(in, out, n); break;
    case QuantCode::kE5M2: decode_kernel<QuantCode::kE5M2><<<blocks, 256, 0, stream>>>(in, out, n); break;
    case QuantCode::kI8: decode_kernel<QuantCode::kI8><<<blocks, 256, 0, stream>>>(in, out, n); break;
  }
  return cudaGetLastError();
}

cudaError_t launch_dequantize_accumulator_i32(const int32_t* acc, const float* x_scale, const float* w_scale,
                                              const bf16* bias, bf16* y, int64_t M, int64_t N, cudaStream_t stream) {
  return launch_dequantize(acc, x_scale, w_scale, bias, y, M, N, stream);
}

cudaError_t launch_dequantize_accumulator_f32(const float* acc, const float* x_scale, const float* w_scale,
                                              const bf16* bias, bf16* y, int64_t M, int64_t N, cudaStream_t stream) {
  return launch_dequantize(acc, x_scale, w_scale, bias, y, M, N, stream);
}

}  // namespace orochi::cuda::kernels
