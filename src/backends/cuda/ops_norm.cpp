// Norm ops on Tensors: shape/dtype/device checks, then the kernels in kernels/rms_norm.cu and
// kernels/qk_norm_rope.cu.
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/op_checks.h"
#include "backends/cuda/ops.h"

#include <string>

namespace orochi::cuda {

using detail::bf16_data;

Status rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(x, DType::kBF16, "rms_norm input");
  detail::require_cuda(weight, DType::kBF16, "rms_norm weight");
  detail::require_cuda(out, DType::kBF16, "rms_norm output");
  const int64_t C = x.dim(-1), rows = C ? x.numel() / C : 0;
  OROCHI_CHECK(weight.numel() == C && out.shape() == x.shape(), "rms_norm: input ", x.describe(), ", weight ",
               weight.describe(), ", output ", out.describe());
  detail::require_same_device(x, out, "rms_norm");
  return detail::launch_status(
      kernels::launch_rms_norm(bf16_data(x), bf16_data(weight), bf16_data(out), rows, C, eps, nullptr, stream),
      "rms_norm kernel");
}

namespace detail {

kernels::ModulationRows checked_modulation(const Tensor& x, const Tensor& weight, const Tensor& shift,
                                           const Tensor& scale, const Tensor& idx, const Tensor& out,
                                           const std::string& what, bool out_optional) {
  detail::require_cuda(x, DType::kBF16, (what + " input").c_str());
  OROCHI_CHECK(x.ndim() == 2, what, " input must be [S, C], got ", x.describe());
  const int64_t S = x.dim(0), C = x.dim(1);
  detail::require_cuda(weight, DType::kBF16, (what + " weight").c_str());
  OROCHI_CHECK(weight.numel() == C, what, ": input ", x.describe(), ", weight ", weight.describe());
  if (out.defined() || !out_optional) {
    detail::require_cuda(out, DType::kBF16, (what + " output").c_str());
    OROCHI_CHECK(out.shape() == x.shape(), what, ": input ", x.describe(), ", output ", out.describe());
    detail::require_same_device(x, out, what.c_str());
  }
  detail::require_row_strided(shift, C, DType::kBF16, (what + " shift").c_str());
  detail::require_row_strided(scale, C, DType::kBF16, (what + " scale").c_str());
  OROCHI_CHECK(shift.dim(0) == scale.dim(0), what, ": shift ", shift.describe(), " and scale ", scale.describe(),
               " differ in rows");
  kernels::ModulationRows mod;
  mod.idx = detail::require_indices(idx, S, (what + " index").c_str());
  mod.shift = bf16_data(shift);
  mod.shift_stride = shift.strides()[0];
  mod.scale = bf16_data(scale);
  mod.scale_stride = scale.strides()[0];
  return mod;
}

}  // namespace detail

using detail::checked_modulation;

Status rms_norm_modulate(const Tensor& x, const Tensor& weight, float eps, const Tensor& shift, const Tensor& scale,
                         const Tensor& idx, const Tensor& out, cudaStream_t stream) {
  const kernels::ModulationRows mod = checked_modulation(x, weight, shift, scale, idx, out, "rms_norm_modulate");
  return detail::launch_status(kernels::launch_rms_norm(bf16_data(x), bf16_data(weight), bf16_data(out), x.dim(0),
                                                        x.dim(1), eps, &mod, stream),
                               "rms_norm_modulate kernel");
}

Status gated_residual_rms_norm_modulate(const Tensor& h, const Tensor& gate, const Tensor& y, const Tensor& weight,
                                        float eps, const Tensor& shift, const Tensor& scale, const Tensor& idx,
                                        const Tensor& out, cudaStream_t stream) {
  const std::string what = "gated_residual_rms_norm_modulate";
  const kernels::ModulationRows mod = checked_modulation(h, weight, shift, scale, idx, out, what);
  const int64_t S = h.dim(0), C = h.dim(1);
  detail::require_cuda(y, DType::kBF16, (what + " update").c_str());
  OROCHI_CHECK(y.shape() == h.shape(), what, ": state ", h.describe(), " vs update ", y.describe());
  detail::require_row_strided(gate, C, DType::kBF16, (what + " gate").c_str());
  OROCHI_CHECK(gate.dim(0) == shift.dim(0), what, ": gate ", gate.describe(), " and shift ", shift.describe(),
               " differ in rows");
  detail::require_same_device(h, y, what.c_str());
  return detail::launch_status(
      kernels::launch_gated_residual_rms_norm(bf16_data(h), bf16_data(gate), gate.strides()[0], mod.idx, bf16_data(y),
                                              bf16_data(weight), bf16_data(out), S, C, eps, &mod, stream),
      (what + " kernel").c_str());
}

Status qk_norm_rope(const Tensor& x, const Tensor& weight, float eps, const Tensor& cos, const Tensor& sin,
                    cudaStream_t stream, bool items_kernel) {
  detail::require_cuda(x, DType::kBF16, "qk_norm_rope input");
  OROCHI_CHECK(x.ndim() == 3, "qk_norm_rope input must be [S, heads, D], got ", x.describe());
  const int64_t S = x.dim(0), heads = x.dim(1), D = x.dim(2);
  detail::require_cuda(weight, DType::kBF16, "qk_norm_rope weight");
  OROCHI_CHECK(weight.numel() == D, "qk_norm_rope weight ", weight.describe(), " for head_dim ", D);
  OROCHI_CHECK(cos.defined() == sin.defined(), "qk_norm_rope: give both cos and sin, or neither");
  int64_t R = 0;
  if (cos.defined()) {
    detail::require_cuda(cos, DType::kBF16, "qk_norm_rope cos");
    detail::require_cuda(sin, DType::kBF16, "qk_norm_rope sin");
    R = cos.dim(-1);
    OROCHI_CHECK(cos.ndim() == 2 && cos.dim(0) == S && sin.shape() == cos.shape() && R % 2 == 0 && R <= D,
                 "qk_norm_rope: cos ", cos.describe(), ", sin ", sin.describe(), " for input ", x.describe(),
                 " (need [S, R] with R even and <= head_dim)");
  }
  return detail::launch_status(
      kernels::launch_qk_norm_rope(bf16_data(x), bf16_data(weight), S, heads, D, eps,
                                   R ? bf16_data(cos) : nullptr, R ? bf16_data(sin) : nullptr, R, stream,
                                   /*round_before_weight=*/false, items_kernel),
      "qk_norm_rope kernel");
}

}  // namespace orochi::cuda
