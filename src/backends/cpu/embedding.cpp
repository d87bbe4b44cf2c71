// Position encodings: the sinusoidal timestep embedding and the 3-axis rotary embedding.
#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {

Tensor timestep_embedding(const Tensor& t, int dim, float max_period) {
  detail::require_f32_contiguous(t, "timesteps");
  OROCHI_CHECK(t.ndim() == 1 && dim % 2 == 0 && dim > 0, "timestep_embedding: t ", t.describe(),
               ", dim ", dim);
  const int half = dim / 2;
  const int64_t n = t.numel();
  Tensor out = Tensor::empty({n, dim}, DType::kF32);
  const float* pt = t.data<float>();
  float* po = out.data<float>();
  // Same op order as the reference: exponent = -ln(P)·k, divided by half, exp'd, all fp32.
  const float neg_log_period = -std::log(max_period);
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < half; ++k) {
      const float freq = std::exp(neg_log_period * static_cast<float>(k) / static_cast<float>(half));
      const float angle = pt[i] * freq;
      po[i * dim + k] = std::cos(angle);
      po[i * dim + half + k] = std::sin(angle);
    }
  }
  return out;
}

Tensor rope_inv_freq(int freq_dim, float theta) {
  OROCHI_CHECK(freq_dim > 0, "rope freq_dim must be positive");
  std::vector<float> inv(freq_dim);
  for (int k = 0; k < freq_dim; ++k) {
    const float exponent = static_cast<float>(2 * k) / static_cast<float>(2 * freq_dim);
    inv[k] = 1.0f / std::pow(theta, exponent);
  }
  return Tensor::from_floats(inv, {freq_dim});
}

RopeTable rope_table(const Tensor& positions, const Tensor& inv_freq) {
  detail::require_f32_contiguous(positions, "rope positions");
  detail::require_f32_contiguous(inv_freq, "rope inv_freq");
  OROCHI_CHECK(positions.ndim() == 2 && positions.dim(1) == 3, "rope positions must be [S, 3], got ",
               positions.describe());
  const int64_t S = positions.dim(0), F = inv_freq.numel(), R = 6 * F;
  RopeTable table{Tensor::empty({S, R}, DType::kF32), Tensor::empty({S, R}, DType::kF32)};
  const float* pp = positions.data<float>();
  const float* pf = inv_freq.data<float>();
  float* pc = table.cos.data<float>();
  float* ps = table.sin.data<float>();
  for (int64_t s = 0; s < S; ++s) {
    for (int axis = 0; axis < 3; ++axis) {
      for (int64_t k = 0; k < F; ++k) {
        const float angle = pp[s * 3 + axis] * pf[k];
        const int64_t col = axis * F + k;
        pc[s * R + col] = pc[s * R + col + 3 * F] = std::cos(angle);
        ps[s * R + col] = ps[s * R + col + 3 * F] = std::sin(angle);
      }
    }
  }
  return table;
}

void apply_rope(Tensor& x, const RopeTable& table) {
  detail::require_f32_contiguous(x, "rope input");
  detail::require_f32_contiguous(table.cos, "rope cos");
  detail::require_f32_contiguous(table.sin, "rope sin");
  OROCHI_CHECK(x.ndim() == 3, "rope input must be [S, H, D], got ", x.describe());
  const int64_t S = x.dim(0), H = x.dim(1), D = x.dim(2), R = table.cos.dim(1), half = R / 2;
  OROCHI_CHECK(table.cos.dim(0) == S && R % 2 == 0 && R <= D, "rope table ", table.cos.describe(),
               " for input ", x.describe());
  float* px = x.data<float>();
  const float* pc = table.cos.data<float>();
  const float* ps = table.sin.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > detail::kParallelWork)
  for (int64_t s = 0; s < S; ++s) {
    const float* c = pc + s * R;
    const float* sn = ps + s * R;
    for (int64_t h = 0; h < H; ++h) {
      float* row = px + (s * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = row[i], x2 = row[i + half];
        row[i] = x1 * c[i] - x2 * sn[i];
        row[i + half] = x2 * c[i + half] + x1 * sn[i + half];
      }
    }
  }
}

}  // namespace orochi::cpu
