#include "core/quantize.h"

#include <array>
#include <cmath>
#include <vector>

#include "core/check.h"

namespace orochi {
namespace {

void require_format(DType format) {
  OROCHI_CHECK(format == DType::kF8E4M3 || format == DType::kI8, "quantized operands are f8e4m3 or i8, got ",
               dtype_name(format));
}

void require_quantized(const RowQuantized& q, const char* what) {
  OROCHI_CHECK(q.codes.defined() && q.codes.ndim() == 2 && q.codes.is_contiguous(), what, ": codes must be a contiguous [R, C] tensor, got ",
               q.codes.defined() ? q.codes.describe() : "undefined");
  require_format(q.codes.dtype());
  OROCHI_CHECK(q.scales.defined() && q.scales.dtype() == DType::kF32 && q.scales.ndim() == 1 &&
                   q.scales.numel() == q.codes.dim(0) && q.scales.is_contiguous(),
               what, ": scales must be f32 [", q.codes.dim(0), "], got ", q.scales.defined() ? q.scales.describe() : "undefined");
}

// The value of every code of `format`.
std::array<float, 256> code_values(DType format) {
  std::array<float, 256> v{};
  for (int c = 0; c < 256; ++c)
    v[c] = format == DType::kI8 ? static_cast<float>(static_cast<int8_t>(c))
                                : fp8_to_f32(static_cast<uint8_t>(c), Fp8Format::kE4M3);
  return v;
}

}  // namespace

float quant_max(DType format) {
  require_format(format);
  return format == DType::kI8 ? static_cast<float>(kInt8Max) : fp8_max(Fp8Format::kE4M3);
}

RowScale row_scale(float amax, DType format) {
  const float qmax = quant_max(format);
  const float a = std::fmax(amax, kMinAmax);
  return RowScale{a / qmax, qmax / a};
}

uint8_t quantize_value(float x, float inverse, DType format) {
  const float scaled = x * inverse;
  return format == DType::kI8 ? static_cast<uint8_t>(f32_to_int8(scaled)) : f32_to_fp8(scaled, Fp8Format::kE4M3);
}

RowQuantized quantize_rows(const Tensor& x, DType format) {
  require_format(format);
  OROCHI_CHECK(x.defined() && x.ndim() == 2 && (x.dtype() == DType::kF32 || x.dtype() == DType::kBF16),
               "quantize_rows: x must be f32 or bf16 [R, C], got ", x.defined() ? x.describe() : "undefined");
  const Tensor xc = x.contiguous();
  const int64_t R = x.dim(0), C = x.dim(1);
  RowQuantized q{Tensor::uninitialized({R, C}, format), Tensor::uninitialized({R}, DType::kF32)};
  auto* codes = static_cast<uint8_t*>(q.codes.raw_data());
  float* scales = q.scales.data<float>();
  const bool bf16 = x.dtype() == DType::kBF16;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    std::vector<float> row(static_cast<size_t>(C));  // [C]
    if (bf16) {
      const auto* src = static_cast<const uint16_t*>(xc.raw_data()) + r * C;
      for (int64_t c = 0; c < C; ++c) row[c] = bf16_to_f32(src[c]);
    } else {
      const float* src = xc.data<float>() + r * C;
      for (int64_t c = 0; c < C; ++c) row[c] = src[c];
    }
    float amax = 0.0f;
    for (float v : row) amax = std::fmax(amax, std::fabs(v));
    const RowScale s = row_scale(amax, format);
    scales[r] = s.scale;
    for (int64_t c = 0; c < C; ++c) codes[r * C + c] = quantize_value(row[c], s.inverse, format);
  }
  return q;
}

Tensor dequantize_rows(const RowQuantized& q) {
  require_quantized(q, "dequantize_rows");
  const std::array<float, 256> value = code_values(q.codes.dtype());
  const int64_t R = q.rows(), C = q.cols();
  Tensor out = Tensor::uninitialized({R, C}, DType::kF32);
  const auto* codes = static_cast<const uint8_t*>(q.codes.raw_data());
  const float* scales = q.scales.data<float>();
  float* y = out.data<float>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = value[codes[r * C + c]] * scales[r];
  return out;
}

float dequantize_accumulator(float acc, float x_scale, float w_scale, float bias) {
  return std::fma(acc, x_scale * w_scale, bias);
}

Tensor quantized_linear(const RowQuantized& x, const RowQuantized& w, const Tensor* bias) {
  require_quantized(x, "quantized_linear input");
  require_quantized(w, "quantized_linear weight");
  OROCHI_CHECK(x.codes.dtype() == w.codes.dtype(), "quantized_linear: input ", x.codes.describe(), " and weight ",
               w.codes.describe(), " differ in format");
  OROCHI_CHECK(x.cols() == w.cols(), "quantized_linear: input ", x.codes.describe(), " does not match weight ",
               w.codes.describe());
  const int64_t M = x.rows(), N = w.rows(), K = x.cols();
  if (bias)
    OROCHI_CHECK(bias->dtype() == DType::kF32 && bias->numel() == N && bias->is_contiguous(),
                 "quantized_linear: bias must be f32 [", N, "], got ", bias->describe());
  const bool int8 = x.codes.dtype() == DType::kI8;
  OROCHI_CHECK(!int8 || K <= (int64_t{1} << 17), "quantized_linear: K = ", K,
               " could overflow the int32 accumulator of an int8 GEMM (127² · K must stay below 2^31)");
  const std::array<float, 256> value = code_values(x.codes.dtype());
  const auto* xc = static_cast<const uint8_t*>(x.codes.raw_data());
  const auto* wc = static_cast<const uint8_t*>(w.codes.raw_data());
  const float* xs = x.scales.data<float>();
  const float* ws = w.scales.data<float>();
  const float* b = bias ? bias->data<float>() : nullptr;
  Tensor out = Tensor::uninitialized({M, N}, DType::kF32);  // [M, N]
  float* y = out.data<float>();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const uint8_t* xr = xc + m * K;
      const uint8_t* wr = wc + n * K;
      float acc;
      if (int8) {
        int64_t sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += static_cast<int64_t>(static_cast<int8_t>(xr[k])) * static_cast<int8_t>(wr[k]);
        acc = static_cast<float>(static_cast<int32_t>(sum));
      } else {
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += static_cast<double>(value[xr[k]]) * value[wr[k]];
        acc = static_cast<float>(sum);
      }
      y[m * N + n] = dequantize_accumulator(acc, xs[m], ws[n], b ? b[n] : 0.0f);
    }
  return out;
}

Tensor emulated_quantized_linear(const Tensor& x, const Tensor& weight, const Tensor* bias, DType format) {
  const RowQuantized xq = quantize_rows(x.contiguous().to(DType::kBF16), format);  // per token [M, K]
  const RowQuantized wq = quantize_rows(weight.to(DType::kBF16), format);          // per channel [N, K]
  return quantized_linear(xq, wq, bias);                                          // [M, N]
}

}  // namespace orochi
