#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  detail::require_f32_contiguous(x, "rms_norm input");
  detail::require_f32_contiguous(weight, "rms_norm weight");
  const int64_t C = x.dim(-1), rows = x.numel() / C;
  OROCHI_CHECK(weight.numel() == C, "rms_norm weight ", weight.describe(), " for width ", C);
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  const float* pw = weight.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > detail::kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * C;
    float sum = 0.0f;
    for (int64_t c = 0; c < C; ++c) sum += xr[c] * xr[c];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(C) + eps);
    for (int64_t c = 0; c < C; ++c) py[r * C + c] = xr[c] * inv * pw[c];
  }
  return y;
}

}  // namespace orochi::cpu
