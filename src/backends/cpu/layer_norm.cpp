#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_vae.h"

namespace orochi::cpu {

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  detail::require_f32_contiguous(x, "layer_norm input");
  detail::require_f32_contiguous(weight, "layer_norm weight");
  detail::require_f32_contiguous(bias, "layer_norm bias");
  const int64_t C = x.dim(-1), rows = x.numel() / C;
  OROCHI_CHECK(weight.numel() == C && bias.numel() == C, "layer_norm weight ", weight.describe(), " bias ",
               bias.describe(), " for width ", C);
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  const float* pw = weight.data<float>();
  const float* pb = bias.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > detail::kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * C;
    // Row statistics in fp64, two passes: PyTorch's CPU kernel uses a cascade sum, which an fp32
    // running sum would trail badly on wide rows with a large common offset.
    double sum = 0.0;
    for (int64_t c = 0; c < C; ++c) sum += xr[c];
    const float mean = static_cast<float>(sum / static_cast<double>(C));
    double sq = 0.0;
    for (int64_t c = 0; c < C; ++c) sq += static_cast<double>(xr[c] - mean) * (xr[c] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(C) + eps));
    for (int64_t c = 0; c < C; ++c) py[r * C + c] = (xr[c] - mean) * inv * pw[c] + pb[c];
  }
  return y;
}

void add_scaled_inplace(Tensor& h, const Tensor& y, const Tensor& scale) {
  detail::require_f32_contiguous(h, "scaled residual state");
  detail::require_f32_contiguous(y, "scaled residual update");
  detail::require_f32_contiguous(scale, "scaled residual scale");
  OROCHI_CHECK(h.shape() == y.shape() && h.ndim() >= 1 && scale.numel() == h.dim(-1), "add_scaled: h ",
               h.describe(), " y ", y.describe(), " scale ", scale.describe());
  const int64_t C = h.dim(-1), rows = h.numel() / C;
  float* ph = h.data<float>();
  const float* py = y.data<float>();
  const float* ps = scale.data<float>();
#pragma omp parallel for schedule(static) if (h.numel() > detail::kParallelWork)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const float update = py[r * C + c] * ps[c];
      ph[r * C + c] += update;
    }
}

}  // namespace orochi::cpu
