#include <cmath>
#include <vector>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_conv3d.h"

namespace orochi::cpu {
namespace {

// Normalizes every (frame, group) of x [C, T, H, W]; the statistics in double.
Tensor group_norm_frames(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups, float eps,
                         bool then_silu) {
  detail::require_f32_contiguous(x, "group_norm input");
  detail::require_f32_contiguous(weight, "group_norm weight");
  detail::require_f32_contiguous(bias, "group_norm bias");
  OROCHI_CHECK(x.ndim() == 4, "group_norm_per_frame: input ", x.describe(), " must be [C, T, H, W]");
  const int64_t C = x.dim(0), T = x.dim(1), HW = x.dim(2) * x.dim(3);
  OROCHI_CHECK(groups >= 1 && C % groups == 0 && weight.numel() == C && bias.numel() == C, "group_norm: ", C,
               " channels in ", groups, " groups with weight ", weight.describe(), " and bias ", bias.describe());
  const int64_t cg = C / groups;
  Tensor y = Tensor::uninitialized(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  const float* pw = weight.data<float>();
  const float* pb = bias.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static) if (x.numel() > (int64_t{1} << 16))
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t g = 0; g < groups; ++g) {
      double sum = 0, sum_sq = 0;
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
        const float* plane = px + (c * T + t) * HW;
        for (int64_t i = 0; i < HW; ++i) sum += plane[i];
      }
      const double n = static_cast<double>(cg * HW), mean = sum / n;
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
        const float* plane = px + (c * T + t) * HW;
        for (int64_t i = 0; i < HW; ++i) sum_sq += (plane[i] - mean) * (plane[i] - mean);
      }
      const float rstd = static_cast<float>(1.0 / std::sqrt(sum_sq / n + eps));
      const float meanf = static_cast<float>(mean);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
        // y = (x − mean) · rstd · w + b = x · scale + shift, as torch's CPU kernel folds it.
        const float scale = rstd * pw[c], shift = pb[c] - meanf * scale;
        const float* src = px + (c * T + t) * HW;
        float* dst = py + (c * T + t) * HW;
        for (int64_t i = 0; i < HW; ++i) {
          const float v = src[i] * scale + shift;
          dst[i] = then_silu ? v / (1.0f + std::exp(-v)) : v;
        }
      }
    }
  }
  return y;
}

}  // namespace

Tensor group_norm_per_frame(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups, float eps) {
  return group_norm_frames(x, weight, bias, groups, eps, false);
}

Tensor group_norm_silu_per_frame(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups,
                                 float eps) {
  return group_norm_frames(x, weight, bias, groups, eps, true);
}

}  // namespace orochi::cpu
