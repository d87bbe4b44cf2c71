#include <algorithm>

#include "backends/cpu/conv1d_ranges.h"
#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_audio.h"

namespace orochi::cpu {

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv1dParams& p) {
  detail::require_f32_contiguous(x, "conv1d input");
  detail::require_f32_contiguous(w, "conv1d weight");
  OROCHI_CHECK(x.ndim() == 3 && w.ndim() == 3, "conv1d: input ", x.describe(), " and weight ", w.describe(),
               " must be [B, C, L] and [Cout, Cin/groups, K]");
  OROCHI_CHECK(p.stride >= 1 && p.dilation >= 1 && p.padding >= 0 && p.groups >= 1, "conv1d: bad params");
  const int64_t B = x.dim(0), Cin = x.dim(1), L = x.dim(2);
  const int64_t Cout = w.dim(0), Cin_g = w.dim(1), K = w.dim(2);
  OROCHI_CHECK(Cin % p.groups == 0 && Cout % p.groups == 0 && Cin_g == Cin / p.groups, "conv1d: input ", x.describe(),
               " does not match weight ", w.describe(), " with ", p.groups, " groups");
  const int64_t Lout = (L + 2 * p.padding - p.dilation * (K - 1) - 1) / p.stride + 1;
  OROCHI_CHECK(L + 2 * p.padding >= p.dilation * (K - 1) + 1 && Lout >= 1, "conv1d: input length ", L,
               " is shorter than the kernel's reach ", p.dilation * (K - 1) + 1);
  if (bias) {
    detail::require_f32_contiguous(*bias, "conv1d bias");
    OROCHI_CHECK(bias->numel() == Cout, "conv1d bias ", bias->describe(), " for ", Cout, " outputs");
  }
  Tensor y = Tensor::empty({B, Cout, Lout}, DType::kF32);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.data<float>();
  const int64_t Cout_g = Cout / p.groups;
#pragma omp parallel for collapse(2) schedule(static) if (B * Cout * Lout * Cin_g * K > detail::kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t co = 0; co < Cout; ++co) {
      float* out = py + (b * Cout + co) * Lout;
      std::fill(out, out + Lout, pb ? pb[co] : 0.0f);
      const int64_t first_input = (co / Cout_g) * Cin_g;
      for (int64_t ci = 0; ci < Cin_g; ++ci) {
        const float* in = px + (b * Cin + first_input + ci) * L;
        for (int64_t k = 0; k < K; ++k) {
          // out[t] reads in[t·stride + offset]; outside [0, L) is zero padding: skip those t.
          const float wk = pw[(co * Cin_g + ci) * K + k];
          const int64_t offset = k * p.dilation - p.padding;
          const detail::Range t = detail::strided_reads_in_bounds(offset, p.stride, L, Lout);
          if (t.end <= t.begin) continue;
          if (p.stride == 1) {  // the common case, written so the loop vectorizes
            const float* src = in + t.begin + offset;
            float* dst = out + t.begin;
            for (int64_t i = 0; i < t.end - t.begin; ++i) dst[i] += wk * src[i];
          } else {
            for (int64_t i = t.begin; i < t.end; ++i) out[i] += wk * in[i * p.stride + offset];
          }
        }
      }
    }
  }
  return y;
}

}  // namespace orochi::cpu
