// Pointwise ops of the 1-D audio networks: SnakeBeta and the output clamp.
#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_audio.h"

namespace orochi::cpu {

Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta) {
  detail::require_f32_contiguous(x, "snake_beta input");
  detail::require_f32_contiguous(log_alpha, "snake_beta alpha");
  detail::require_f32_contiguous(log_beta, "snake_beta beta");
  OROCHI_CHECK(x.ndim() == 3 && log_alpha.numel() == x.dim(1) && log_beta.numel() == x.dim(1), "snake_beta: input ",
               x.describe(), " needs per-channel parameters, got ", log_alpha.describe(), " and ", log_beta.describe());
  const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2);
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static) if (x.numel() * 8 > detail::kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      // Both parameters are stored as logs; the 1e-9 guards beta -> 0 (it vanishes in fp32 for
      // beta near 1, as in the reference).
      const float alpha = std::exp(log_alpha.data<float>()[c]);
      const float inv_beta = 1.0f / (std::exp(log_beta.data<float>()[c]) + 1e-9f);
      const float* in = px + (b * C + c) * L;
      float* out = py + (b * C + c) * L;
      for (int64_t i = 0; i < L; ++i) {
        const float s = std::sin(alpha * in[i]);
        out[i] = in[i] + inv_beta * (s * s);
      }
    }
  }
  return y;
}

void clamp_inplace(Tensor& x, float lo, float hi) {
  detail::require_f32_contiguous(x, "clamp input");
  OROCHI_CHECK(lo <= hi, "clamp: empty range [", lo, ", ", hi, "]");
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (!std::isnan(p[i])) p[i] = std::fmin(std::fmax(p[i], lo), hi);
}

}  // namespace orochi::cpu
