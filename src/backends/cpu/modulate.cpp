#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {

Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, const Tensor& idx) {
  detail::require_f32_contiguous(x, "modulate input");
  OROCHI_CHECK(x.ndim() == 2, "modulate input must be [S, C], got ", x.describe());
  const int64_t S = x.dim(0), C = x.dim(1);
  detail::require_row_strided(shift, C, "modulate shift");
  detail::require_row_strided(scale, C, "modulate scale");
  OROCHI_CHECK(shift.dim(0) == scale.dim(0), "shift and scale tables differ in rows");
  OROCHI_CHECK(idx.numel() == S, "modulate: ", idx.numel(), " indices for ", S, " rows");
  const int64_t* pi = detail::checked_indices(idx, shift.dim(0), "modulate index");
  const int64_t shift_stride = shift.strides()[0], scale_stride = scale.strides()[0];
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  const float* psh = shift.data<float>();
  const float* psc = scale.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (S * C > detail::kParallelWork)
  for (int64_t s = 0; s < S; ++s) {
    const float* sh = psh + pi[s] * shift_stride;
    const float* sc = psc + pi[s] * scale_stride;
    for (int64_t c = 0; c < C; ++c) py[s * C + c] = px[s * C + c] * (1.0f + sc[c]) + sh[c];
  }
  return y;
}

void gated_residual(Tensor& h, const Tensor& gate, const Tensor& idx, const Tensor& y) {
  detail::require_f32_contiguous(h, "gated_residual state");
  detail::require_f32_contiguous(y, "gated_residual update");
  OROCHI_CHECK(h.ndim() == 2 && h.shape() == y.shape(), "gated_residual: ", h.describe(), " vs ",
               y.describe());
  const int64_t S = h.dim(0), C = h.dim(1);
  detail::require_row_strided(gate, C, "gated_residual gate");
  OROCHI_CHECK(idx.numel() == S, "gated_residual: ", idx.numel(), " indices for ", S, " rows");
  const int64_t* pi = detail::checked_indices(idx, gate.dim(0), "gated_residual index");
  const int64_t gate_stride = gate.strides()[0];
  float* ph = h.data<float>();
  const float* pg = gate.data<float>();
  const float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (S * C > detail::kParallelWork)
  for (int64_t s = 0; s < S; ++s) {
    const float* g = pg + pi[s] * gate_stride;
    for (int64_t c = 0; c < C; ++c) ph[s * C + c] += g[c] * py[s * C + c];
  }
}

void add_inplace(Tensor& h, const Tensor& y) {
  detail::require_f32_contiguous(h, "add state");
  detail::require_f32_contiguous(y, "add update");
  OROCHI_CHECK(h.shape() == y.shape(), "add: ", h.describe(), " vs ", y.describe());
  float* ph = h.data<float>();
  const float* py = y.data<float>();
  for (int64_t i = 0; i < h.numel(); ++i) ph[i] += py[i];
}

}  // namespace orochi::cpu
