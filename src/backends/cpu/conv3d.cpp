#include <algorithm>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_conv3d.h"

namespace orochi::cpu {

Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv3dParams& p) {
  detail::require_f32_contiguous(x, "conv3d input");
  detail::require_f32_contiguous(w, "conv3d weight");
  OROCHI_CHECK(x.ndim() == 4 && w.ndim() == 5 && w.dim(1) == x.dim(0), "conv3d: input ", x.describe(),
               " and weight ", w.describe(), " must be [Cin, T, H, W] and [Cout, Cin, kt, kh, kw]");
  OROCHI_CHECK(p.stride_t >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && p.causal_pad_t >= 0, "conv3d: bad params");
  const int64_t Cin = x.dim(0), T = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t Cout = w.dim(0), kt = w.dim(2), kh = w.dim(3), kw = w.dim(4);
  OROCHI_CHECK(T + p.causal_pad_t >= kt && H >= kh && W >= kw, "conv3d: input ", x.describe(), " (+", p.causal_pad_t,
               " causal frames) is smaller than the kernel ", w.describe());
  const int64_t To = (T + p.causal_pad_t - kt) / p.stride_t + 1;
  const int64_t Ho = (H - kh) / p.stride_h + 1, Wo = (W - kw) / p.stride_w + 1;
  if (bias) {
    detail::require_f32_contiguous(*bias, "conv3d bias");
    OROCHI_CHECK(bias->numel() == Cout, "conv3d bias ", bias->describe(), " for ", Cout, " outputs");
  }
  Tensor y = Tensor::uninitialized({Cout, To, Ho, Wo}, DType::kF32);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.data<float>();
  const int64_t work = Cout * To * Ho * Wo * Cin * kt * kh * kw;
#pragma omp parallel for collapse(2) schedule(dynamic) if (work > detail::kParallelWork)
  for (int64_t co = 0; co < Cout; ++co) {
    for (int64_t to = 0; to < To; ++to) {
      float* out = py + (co * To + to) * Ho * Wo;  // [Ho, Wo]
      std::fill(out, out + Ho * Wo, pb ? pb[co] : 0.0f);
      for (int64_t ci = 0; ci < Cin; ++ci) {
        for (int64_t a = 0; a < kt; ++a) {
          const int64_t ti = to * p.stride_t + a - p.causal_pad_t;
          if (ti < 0 || ti >= T) continue;  // a causal zero frame (the front pad) contributes nothing
          const float* frame = px + (ci * T + ti) * H * W;  // [H, W]
          const float* taps = pw + (((co * Cin + ci) * kt + a) * kh) * kw;
          for (int64_t b = 0; b < kh; ++b) {
            for (int64_t c = 0; c < kw; ++c) {
              const float wv = taps[b * kw + c];
              for (int64_t i = 0; i < Ho; ++i) {
                const float* src = frame + (i * p.stride_h + b) * W + c;
                float* dst = out + i * Wo;
                if (p.stride_w == 1) {
                  for (int64_t j = 0; j < Wo; ++j) dst[j] += wv * src[j];
                } else {
                  for (int64_t j = 0; j < Wo; ++j) dst[j] += wv * src[j * p.stride_w];
                }
              }
            }
          }
        }
      }
    }
  }
  return y;
}

Tensor reflect_pad_hw(const Tensor& x, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  detail::require_f32_contiguous(x, "reflect_pad_hw input");
  OROCHI_CHECK(x.ndim() == 4, "reflect_pad_hw: input ", x.describe(), " must be [C, T, H, W]");
  const int64_t CT = x.dim(0) * x.dim(1), H = x.dim(2), W = x.dim(3);
  OROCHI_CHECK(top >= 0 && bottom >= 0 && left >= 0 && right >= 0 && top < H && bottom < H && left < W && right < W,
               "reflect_pad_hw: pads (", top, ", ", bottom, ", ", left, ", ", right, ") must be below the size ", H,
               "x", W);
  const int64_t Hp = H + top + bottom, Wp = W + left + right;
  Tensor y = Tensor::uninitialized({x.dim(0), x.dim(1), Hp, Wp}, DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  // Mirror index without repeating the edge: −1 -> 1, H -> H − 2.
  auto mirror = [](int64_t i, int64_t n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); };
#pragma omp parallel for schedule(static) if (CT * Hp * Wp > (int64_t{1} << 16))
  for (int64_t k = 0; k < CT; ++k)
    for (int64_t i = 0; i < Hp; ++i) {
      const float* src = px + (k * H + mirror(i - top, H)) * W;
      float* dst = py + (k * Hp + i) * Wp;
      for (int64_t j = 0; j < Wp; ++j) dst[j] = src[mirror(j - left, W)];
    }
  return y;
}

}  // namespace orochi::cpu
