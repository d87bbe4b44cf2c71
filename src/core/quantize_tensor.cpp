#include "core/quantize_tensor.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/fp8.h"

namespace orochi {
namespace {

// Row r of x [R, C] (bf16 or f32, contiguous) as f32 values.
void read_row(const Tensor& x, int64_t r, std::vector<float>& row) {
  const int64_t C = x.dim(1);
  row.resize(static_cast<size_t>(C));
  if (x.dtype() == DType::kBF16) {
    const auto* src = static_cast<const uint16_t*>(x.raw_data()) + r * C;
    for (int64_t c = 0; c < C; ++c) row[c] = bf16_to_f32(src[c]);
  } else {
    std::copy_n(x.data<float>() + r * C, C, row.begin());
  }
}

Tensor checked_matrix(const Tensor& x, const char* what) {
  OROCHI_CHECK(x.defined() && x.ndim() == 2 && (x.dtype() == DType::kF32 || x.dtype() == DType::kBF16), what,
               ": x must be f32 or bf16 [R, C], got ", x.defined() ? x.describe() : "undefined");
  return x.contiguous();
}

}  // namespace

std::vector<float> column_means(const Tensor& x) {
  const Tensor xc = checked_matrix(x, "column_means");
  const int64_t R = xc.dim(0), C = xc.dim(1);
  const int64_t tiles = (R + kColumnMeanTileRows - 1) / kColumnMeanTileRows;
  std::vector<float> partial(static_cast<size_t>(tiles * C), 0.0f);  // [tiles, C]
  std::vector<float> row;
  for (int64_t r = 0; r < R; ++r) {
    read_row(xc, r, row);
    float* p = partial.data() + (r / kColumnMeanTileRows) * C;
    for (int64_t c = 0; c < C; ++c) p[c] += row[c];
  }
  std::vector<float> mean(static_cast<size_t>(C), 0.0f);
  for (int64_t c = 0; c < C; ++c) {
    float sum = 0.0f;
    for (int64_t t = 0; t < tiles; ++t) sum += partial[t * C + c];
    mean[c] = sum / static_cast<float>(R);
  }
  return mean;
}

TensorQuantized quantize_tensor(const Tensor& x, const std::vector<float>& column_offset) {
  const Tensor xc = checked_matrix(x, "quantize_tensor");
  const int64_t R = xc.dim(0), C = xc.dim(1);
  OROCHI_CHECK(column_offset.empty() || static_cast<int64_t>(column_offset.size()) == C,
               "quantize_tensor: the column offset has ", column_offset.size(), " values for ", C, " columns");
  std::vector<float> values(static_cast<size_t>(R * C));  // [R, C] offset values
  std::vector<float> row;
  for (int64_t r = 0; r < R; ++r) {
    read_row(xc, r, row);
    for (int64_t c = 0; c < C; ++c) values[r * C + c] = column_offset.empty() ? row[c] : row[c] - column_offset[c];
  }
  TensorQuantized q;
  for (float v : values) q.amax = std::fmax(q.amax, std::fabs(v));
  q.scale = row_scale(q.amax, DType::kF8E4M3);
  q.codes = Tensor::uninitialized({R, C}, DType::kF8E4M3);
  auto* codes = static_cast<uint8_t*>(q.codes.raw_data());
  for (size_t i = 0; i < values.size(); ++i) codes[i] = quantize_value(values[i], q.scale.inverse, DType::kF8E4M3);
  return q;
}

Tensor dequantize_tensor_to_bf16(const Tensor& codes, float scale) {
  OROCHI_CHECK(codes.defined() && codes.dtype() == DType::kF8E4M3,
               "dequantize_tensor_to_bf16: codes must be e4m3, got ", codes.defined() ? codes.describe() : "undefined");
  const Tensor cc = codes.contiguous();
  Tensor out = Tensor::uninitialized(cc.shape(), DType::kBF16);
  const auto* in = static_cast<const uint8_t*>(cc.raw_data());
  auto* y = static_cast<uint16_t*>(out.raw_data());
  for (int64_t i = 0; i < cc.numel(); ++i) y[i] = f32_to_bf16(fp8_to_f32(in[i], Fp8Format::kE4M3) * scale);
  return out;
}

}  // namespace orochi
