// Row-scaled quantization of the low-precision linears, the CPU reference the CUDA kernels are
// tested against (bit for bit for the codes and scales):
//  - a matrix [R, C] is quantized row by row with one f32 scale per row: weights [N, K] per output
//    channel, activations [M, K] per token;
//  - the row's scale is max(amax, kMinAmax) / qmax (qmax = 448 for e4m3, 127 for int8) and each
//    element's code is round(x · (qmax / max(amax, kMinAmax))) in the format's rounding
//    (core/fp8.h): one IEEE division for the inverse, one multiply per element, so any backend that
//    does the same two operations gets the same codes;
//  - y = x · w^T + bias is then acc[m, n] · (x_scale[m] · w_scale[n]) + bias[n], with acc the
//    exact dot product of the codes (dequantize_accumulator, the epilogue's one formula).
#pragma once

#include <cstdint>

#include "core/fp8.h"
#include "core/tensor.h"

namespace orochi {

// A row whose largest magnitude is below this is scaled as if it were this: an all-zero row gets
// codes 0 and a finite scale instead of 0/0 (torchao's clamp). Values that small vanish anyway.
inline constexpr float kMinAmax = 1e-12f;

// The formats of quantized operands: DType::kF8E4M3 or DType::kI8. Checks (OROCHI_CHECK) it is one.
float quant_max(DType format);  // 448 or 127

struct RowScale {
  float scale = 1.0f;    // dequantizes: x ≈ code · scale
  float inverse = 1.0f;  // quantizes: code = round(x · inverse)
};
// From the row's largest magnitude (NaNs ignored, as fmaxf does).
RowScale row_scale(float amax, DType format);
// One element's code bits (an int8 code as its two's-complement byte).
uint8_t quantize_value(float x, float inverse, DType format);

struct RowQuantized {
  Tensor codes;   // [R, C] kF8E4M3 or kI8, host here, CUDA from backends/cuda/quantize.h; scale() stays 1
  Tensor scales;  // [R] f32: row r is codes[r] · scales[r]
  int64_t rows() const { return codes.dim(0); }
  int64_t cols() const { return codes.dim(1); }
};

// x [R, C] (f32 or bf16, host) -> codes and per-row scales in `format`.
RowQuantized quantize_rows(const Tensor& x, DType format);
// f32 [R, C]: codes[r, c] · scales[r].
Tensor dequantize_rows(const RowQuantized& q);

// The epilogue of a quantized GEMM: acc · (x_scale · w_scale) + bias, with one rounding for the
// scale product and one (fused multiply-add) for the rest.
float dequantize_accumulator(float acc, float x_scale, float w_scale, float bias);

// The reference quantized linear: x [M, K] and w [N, K] quantized in one format, bias [N] f32 or
// null -> f32 [M, N] = dequantize_accumulator(acc[m, n], ...). acc is the exact dot product of the
// codes: int8 sums in integers (the GPU's int32 accumulator gives the same value, so its epilogue
// can match this bit for bit), e4m3 products are exact and summed in f64, so this is the quantized
// product's truth and a GPU's distance to it is the GPU's own accumulation error.
Tensor quantized_linear(const RowQuantized& x, const RowQuantized& w, const Tensor* bias);

// What a GPU's quantized linear computes, on the host (the CPU forwards' emulation of --precision
// fp8 / int8): x [M, K] and weight [N, K] (any float dtype) rounded to bf16 as the GPU holds them,
// quantized per token and per output channel in `format`, then quantized_linear -> f32 [M, N].
Tensor emulated_quantized_linear(const Tensor& x, const Tensor& weight, const Tensor* bias, DType format);

}  // namespace orochi
