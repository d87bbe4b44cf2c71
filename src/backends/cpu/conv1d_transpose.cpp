#include <algorithm>

#include "backends/cpu/conv1d_ranges.h"
#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_audio.h"

namespace orochi::cpu {

Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvTranspose1dParams& p) {
  detail::require_f32_contiguous(x, "conv_transpose1d input");
  detail::require_f32_contiguous(w, "conv_transpose1d weight");
  OROCHI_CHECK(x.ndim() == 3 && w.ndim() == 3, "conv_transpose1d: input ", x.describe(), " and weight ", w.describe(),
               " must be [B, Cin, L] and [Cin, Cout/groups, K]");
  OROCHI_CHECK(p.stride >= 1 && p.padding >= 0 && p.groups >= 1, "conv_transpose1d: bad params");
  const int64_t B = x.dim(0), Cin = x.dim(1), L = x.dim(2);
  const int64_t Cout_g = w.dim(1), K = w.dim(2), Cout = Cout_g * p.groups;
  OROCHI_CHECK(w.dim(0) == Cin && Cin % p.groups == 0, "conv_transpose1d: input ", x.describe(),
               " does not match weight ", w.describe(), " with ", p.groups, " groups");
  const int64_t Lout = (L - 1) * p.stride - 2 * p.padding + K;
  OROCHI_CHECK(Lout >= 1, "conv_transpose1d: padding ", p.padding, " crops the whole output");
  if (bias) {
    detail::require_f32_contiguous(*bias, "conv_transpose1d bias");
    OROCHI_CHECK(bias->numel() == Cout, "conv_transpose1d bias ", bias->describe(), " for ", Cout, " outputs");
  }
  Tensor y = Tensor::empty({B, Cout, Lout}, DType::kF32);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.data<float>();
  const int64_t Cin_g = Cin / p.groups;
  // Each (b, co) output row is owned by one thread: it gathers the scatter of every input row of
  // its group, input t landing on t·stride + k − padding.
#pragma omp parallel for collapse(2) schedule(static) if (B * Cout * L * Cin_g * K > detail::kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t co = 0; co < Cout; ++co) {
      float* out = py + (b * Cout + co) * Lout;
      std::fill(out, out + Lout, pb ? pb[co] : 0.0f);
      const int64_t group = co / Cout_g, co_in_group = co % Cout_g;
      for (int64_t ci = group * Cin_g; ci < (group + 1) * Cin_g; ++ci) {
        const float* in = px + (b * Cin + ci) * L;
        for (int64_t k = 0; k < K; ++k) {
          const float wk = pw[(ci * Cout_g + co_in_group) * K + k];
          const int64_t offset = k - p.padding;
          const detail::Range t = detail::strided_reads_in_bounds(offset, p.stride, Lout, L);
          for (int64_t i = t.begin; i < t.end; ++i) out[i * p.stride + offset] += wk * in[i];
        }
      }
    }
  }
  return y;
}

}  // namespace orochi::cpu
