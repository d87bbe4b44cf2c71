#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias) {
  detail::require_f32_contiguous(x, "linear input");
  detail::require_f32_contiguous(w, "linear weight");
  OROCHI_CHECK(w.ndim() == 2 && x.dim(-1) == w.dim(1), "linear: input ", x.describe(),
               " does not match weight ", w.describe());
  const int64_t K = w.dim(1), N = w.dim(0), M = x.numel() / K;
  if (bias) {
    detail::require_f32_contiguous(*bias, "linear bias");
    OROCHI_CHECK(bias->numel() == N, "linear bias ", bias->describe(), " for ", N, " outputs");
  }
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape, DType::kF32);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (M * N * K > detail::kParallelWork)
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = px + m * K;
    for (int64_t n = 0; n < N; ++n) {
      const float* wr = pw + n * K;
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
      py[m * N + n] = pb ? acc + pb[n] : acc;
    }
  }
  return y;
}

}  // namespace orochi::cpu
