#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {
namespace {
inline float silu_scalar(float v) { return v / (1.0f + std::exp(-v)); }
}  // namespace

Tensor silu(const Tensor& x) {
  detail::require_f32_contiguous(x, "silu input");
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] = silu_scalar(px[i]);
  return y;
}

Tensor swiglu(const Tensor& u) {
  detail::require_f32_contiguous(u, "swiglu input");
  const int64_t two_i = u.dim(-1);
  OROCHI_CHECK(two_i % 2 == 0, "swiglu input width must be even, got ", u.describe());
  const int64_t I = two_i / 2, rows = u.numel() / two_i;
  Shape out_shape = u.shape();
  out_shape.back() = I;
  Tensor y = Tensor::empty(out_shape, DType::kF32);
  const float* pu = u.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (u.numel() > detail::kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* value = pu + r * two_i;
    const float* gate = value + I;
    for (int64_t i = 0; i < I; ++i) py[r * I + i] = value[i] * silu_scalar(gate[i]);
  }
  return y;
}

}  // namespace orochi::cpu
