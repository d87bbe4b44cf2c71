#include "models/h3_video_vae/blend.h"

#include <algorithm>

#include "core/dtype.h"

namespace orochi::h3vae {

float round_to_precision(float value, BlendPrecision precision) {
  switch (precision) {
    case BlendPrecision::kF32: {
      // A store the compiler must keep: it stops a·w + b·w from being fused into one FMA, which
      // would round once where the reference rounds twice.
      volatile float kept = value;
      return kept;
    }
    case BlendPrecision::kF16: return f16_to_f32(f32_to_f16(value));
    case BlendPrecision::kBF16: return round_to_bf16(value);
  }
  return value;
}

Tensor linear_blend(const Tensor& a, const Tensor& b, int64_t extent, int d, BlendPrecision precision) {
  OROCHI_CHECK(a.dtype() == DType::kF32 && b.dtype() == DType::kF32 && a.is_contiguous() && b.is_contiguous(),
               "linear_blend needs contiguous f32 tensors, got ", a.describe(), " and ", b.describe());
  OROCHI_CHECK(a.ndim() == b.ndim() && d >= 0 && d < b.ndim() && extent >= 0, "linear_blend: ", a.describe(),
               " with ", b.describe(), " along ", d);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < b.ndim(); ++i) {
    OROCHI_CHECK(i == d || a.dim(i) == b.dim(i), "linear_blend: ", a.describe(), " vs ", b.describe());
    if (i < d) outer *= b.dim(i);
    if (i > d) inner *= b.dim(i);
  }
  const int64_t len_a = a.dim(d), len_b = b.dim(d);
  const int64_t n = std::min({len_a, len_b, extent});
  Tensor out = b.clone();
  const float* pa = a.data<float>();
  float* po = out.data<float>();
  const auto P = [precision](float v) { return round_to_precision(v, precision); };
  // Independent rows: parallel over (k, o), each element computed exactly as in a serial loop.
#pragma omp parallel for collapse(2) schedule(static) if (n * outer * inner > (int64_t{1} << 16))
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t o = 0; o < outer; ++o) {
      // The reference's positions are arange(n) in the blend dtype: bf16 rounds integers above 256.
      const float w_b = P(P(static_cast<float>(k)) / static_cast<float>(n));
      const float w_a = P(1.0f - w_b);
      const float* ra = pa + (o * len_a + len_a - n + k) * inner;
      float* rb = po + (o * len_b + k) * inner;
      for (int64_t i = 0; i < inner; ++i) rb[i] = P(P(ra[i] * w_a) + P(rb[i] * w_b));
    }
  }
  return out;
}

}  // namespace orochi::h3vae
