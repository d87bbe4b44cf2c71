// Launchers of the quantization kernels (quantize.cu): raw pointers, shapes and a stream. They
// compute what core/fp8.h and core/quantize.h define, bit for bit: the per-row scale
// max(amax, 1e-12) / qmax, the inverse qmax / max(amax, 1e-12) (one IEEE division), each code the
// saturating round-to-nearest-even of x · inverse (cvt.rn.satfinite on sm_89+), int8 clamped to
// [-127, 127] with NaN -> 0; and the quantized GEMM's epilogue
// y = bf16(fma(acc, x_scale[m] · w_scale[n], bias[n])). Each returns the launch's cudaGetLastError().
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// The code formats (core's Fp8Format and DType::kI8, without framework headers here).
enum class QuantCode : uint8_t { kE4M3, kE5M2, kI8 };

// x [rows, C] (bf16 or f32) -> codes [rows, C] (one byte each) and scales [rows] f32. Every row's
// amax is computed before any of its codes, so in-place use (codes over x) is not supported.
cudaError_t launch_quantize_rows_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, QuantCode code, uint8_t* codes,
                                      float* scales, cudaStream_t stream);
cudaError_t launch_quantize_rows_f32(const float* x, int64_t rows, int64_t C, QuantCode code, uint8_t* codes,
                                     float* scales, cudaStream_t stream);

// Elementwise conversions over n values, no scale: the formats' rounding itself (e4m3 / e5m2 / int8).
cudaError_t launch_encode_f32(const float* in, uint8_t* out, int64_t n, QuantCode code, cudaStream_t stream);
// Codes back to f32 (exact; NaN codes give NaN, e5m2 infinities infinity).
cudaError_t launch_decode_to_f32(const uint8_t* in, float* out, int64_t n, QuantCode code, cudaStream_t stream);

// The dequantizing epilogue of a quantized GEMM whose accumulator acc [M, N] (int32 from an int8
// GEMM, f32 from an unscaled fp8 GEMM) is in memory: y [M, N] bf16 =
// bf16(fma(float(acc), x_scale[m] · w_scale[n], bias ? bias[n] : 0)). Row strides are N.
cudaError_t launch_dequantize_accumulator_i32(const int32_t* acc, const float* x_scale, const float* w_scale,
                                              const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t M, int64_t N,
                                              cudaStream_t stream);
cudaError_t launch_dequantize_accumulator_f32(const float* acc, const float* x_scale, const float* w_scale,
                                              const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t M, int64_t N,
                                              cudaStream_t stream);

}  // namespace orochi::cuda::kernels
