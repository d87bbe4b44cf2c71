// Pointwise and pooling ops of the audio VAE encoder: Snake, the GeGLU product, the head pooling.
#include <cmath>
#include <vector>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_audio_encoder.h"

namespace orochi::cpu {

Tensor snake(const Tensor& x, const Tensor& alpha) {
  detail::require_f32_contiguous(x, "snake input");
  detail::require_f32_contiguous(alpha, "snake alpha");
  OROCHI_CHECK(x.ndim() == 3 && alpha.numel() == x.dim(1), "snake: input ", x.describe(),
               " needs one alpha per channel, got ", alpha.describe());
  const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2);
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const float* px = x.data<float>();
  const float* pa = alpha.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static) if (x.numel() * 8 > detail::kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      // The reference's order: reciprocal of (alpha + 1e-9), times the squared sine, plus x.
      const float a = pa[c];
      const float inv = 1.0f / (a + 1e-9f);
      const float* in = px + (b * C + c) * L;
      float* out = py + (b * C + c) * L;
      for (int64_t i = 0; i < L; ++i) {
        const float s = std::sin(a * in[i]);
        out[i] = in[i] + inv * (s * s);
      }
    }
  }
  return y;
}

Tensor gelu_tanh_mul(const Tensor& gate, const Tensor& up) {
  detail::require_f32_contiguous(gate, "gelu_tanh_mul gate");
  detail::require_f32_contiguous(up, "gelu_tanh_mul up");
  OROCHI_CHECK(gate.shape() == up.shape(), "gelu_tanh_mul: gate ", gate.describe(), " and up ", up.describe(),
               " differ");
  Tensor y = Tensor::empty(gate.shape(), DType::kF32);
  const float* pg = gate.data<float>();
  const float* pu = up.data<float>();
  float* py = y.data<float>();
  const float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2/pi)
  const float kappa = 0.044715f;
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const float a = pg[i];
    const float inner = beta * (a + kappa * (a * a * a));
    const float gelu = 0.5f * a * (1.0f + std::tanh(inner));
    py[i] = gelu * pu[i];
  }
  return y;
}

Tensor pool_heads(const Tensor& x, int64_t out_dim) {
  detail::require_f32_contiguous(x, "pool_heads input");
  OROCHI_CHECK(x.ndim() == 3 && x.dim(2) >= 1 && out_dim >= 1, "pool_heads: input ", x.describe(), " cannot pool to ",
               out_dim);
  const int64_t S = x.dim(0), H = x.dim(1), D = x.dim(2);
  Tensor y = Tensor::empty({S, out_dim}, DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  std::vector<float> mean(static_cast<size_t>(D));
  for (int64_t s = 0; s < S; ++s) {
    // torch.mean over the heads: a sum, then one division by the count.
    for (int64_t d = 0; d < D; ++d) {
      float sum = 0.0f;
      for (int64_t h = 0; h < H; ++h) sum += px[(s * H + h) * D + d];
      mean[d] = sum / static_cast<float>(H);
    }
    for (int64_t i = 0; i < out_dim; ++i) {
      const int64_t begin = (i * D) / out_dim, end = ((i + 1) * D + out_dim - 1) / out_dim;
      float sum = 0.0f;
      for (int64_t d = begin; d < end; ++d) sum += mean[d];
      py[s * out_dim + i] = sum / static_cast<float>(end - begin);
    }
  }
  return y;
}

}  // namespace orochi::cpu
