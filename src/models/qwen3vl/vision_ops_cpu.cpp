#include "models/qwen3vl/vision_ops_cpu.h"

#include <cmath>
#include <cstring>

namespace orochi::qwen3vl {
namespace {

// fp32 for the loops: an f32 view is used in place, any other dtype is converted.
Tensor f32(const Tensor& t) { return t.dtype() == DType::kF32 && t.is_contiguous() ? t : t.to(DType::kF32); }

}  // namespace

// In place, torch's GELU: the tanh approximation ("gelu_pytorch_tanh") or the exact erf form (nn.GELU()).
void gelu_inplace(Tensor& x, VisionActivation act) {
  OROCHI_CHECK(x.dtype() == DType::kF32 && x.is_contiguous(), "gelu input ", x.describe());
  float* p = x.data<float>();
  const int64_t n = x.numel();
  if (act == VisionActivation::kGeluTanh) {
    const float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2 / pi)
    const float kappa = 0.044715f;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) {
      const float v = p[i];
      p[i] = 0.5f * v * (1.0f + std::tanh(beta * (v + kappa * v * v * v)));
    }
  } else {
    const float inv_sqrt2 = static_cast<float>(M_SQRT1_2);
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) p[i] = 0.5f * p[i] * (1.0f + std::erf(p[i] * inv_sqrt2));
  }
}

// Σ_k table[index[4n+k]] · weight[4n+k] in fp32: [N, hidden].
Tensor interpolated_positions(const Tensor& table_any, const PositionTaps& taps) {
  const Tensor table = f32(table_any);
  const int64_t C = table.dim(1), N = static_cast<int64_t>(taps.index.size()) / 4;
  Tensor pe = Tensor::uninitialized({N, C}, DType::kF32);
  const float* t = table.data<float>();
  float* out = pe.data<float>();
#pragma omp parallel for schedule(static) if (N * C > 65536)
  for (int64_t n = 0; n < N; ++n) {
    float* o = out + n * C;
    for (int64_t c = 0; c < C; ++c) o[c] = 0.0f;
    for (int k = 0; k < 4; ++k) {
      const float* row = t + taps.index[static_cast<size_t>(4 * n + k)] * C;
      const float w = taps.weight[static_cast<size_t>(4 * n + k)];
      for (int64_t c = 0; c < C; ++c) o[c] += row[c] * w;
    }
  }
  return pe;
}

SplitHeads split_qkv_rope(const Tensor& qkv, int64_t heads, const cpu::RopeTable& rope) {
  OROCHI_CHECK(qkv.dtype() == DType::kF32 && qkv.is_contiguous() && qkv.ndim() == 2 && qkv.dim(1) % (3 * heads) == 0,
               "qkv ", qkv.describe(), " for ", heads, " heads");
  const int64_t N = qkv.dim(0), C = qkv.dim(1) / 3, D = C / heads;
  SplitHeads s{Tensor::uninitialized({N, heads, D}, DType::kF32), Tensor::uninitialized({N, heads, D}, DType::kF32),
               Tensor::uninitialized({N, heads, D}, DType::kF32)};
  for (int64_t n = 0; n < N; ++n) {  // [N, 3, heads, D] -> three [N, heads, D]
    const float* row = qkv.data<float>() + n * 3 * C;
    std::memcpy(s.q.data<float>() + n * C, row, sizeof(float) * C);
    std::memcpy(s.k.data<float>() + n * C, row + C, sizeof(float) * C);
    std::memcpy(s.v.data<float>() + n * C, row + 2 * C, sizeof(float) * C);
  }
  cpu::apply_rope(s.q, rope);
  cpu::apply_rope(s.k, rope);
  return s;
}

}  // namespace orochi::qwen3vl
