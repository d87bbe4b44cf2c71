// Elementwise ops on Tensors: checks, then the kernels in kernels/elementwise.cu.
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/op_checks.h"
#include "backends/cuda/ops.h"

namespace orochi::cuda {

using detail::bf16_data;

Status swiglu(const Tensor& u, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(u, DType::kBF16, "swiglu input");
  detail::require_cuda(out, DType::kBF16, "swiglu output");
  const int64_t two_i = u.dim(-1);
  OROCHI_CHECK(two_i % 2 == 0, "swiglu input width must be even, got ", u.describe());
  const int64_t I = two_i / 2, M = two_i ? u.numel() / two_i : 0;
  Shape expected = u.shape();
  expected.back() = I;
  OROCHI_CHECK(out.shape() == expected, "swiglu: input ", u.describe(), " needs output ",
               shape_to_string(expected), ", got ", out.describe());
  detail::require_same_device(u, out, "swiglu");
  return detail::launch_status(kernels::launch_swiglu(bf16_data(u), bf16_data(out), M, I, stream),
                               "swiglu kernel");
}

Status gated_residual(const Tensor& h, const Tensor& gate, const Tensor& idx, const Tensor& y, cudaStream_t stream) {
  detail::require_cuda(h, DType::kBF16, "gated_residual state");
  detail::require_cuda(y, DType::kBF16, "gated_residual update");
  OROCHI_CHECK(h.ndim() == 2 && h.shape() == y.shape(), "gated_residual: state ", h.describe(), " vs update ",
               y.describe());
  const int64_t S = h.dim(0), C = h.dim(1);
  detail::require_row_strided(gate, C, DType::kBF16, "gated_residual gate");
  const int64_t* pi = detail::require_indices(idx, S, "gated_residual index");
  detail::require_same_device(h, y, "gated_residual");
  return detail::launch_status(kernels::launch_gated_residual(bf16_data(h), bf16_data(gate), gate.strides()[0], pi,
                                                              bf16_data(y), S, C, stream),
                               "gated_residual kernel");
}

Status add_inplace(const Tensor& h, const Tensor& y, cudaStream_t stream) {
  detail::require_cuda(h, DType::kBF16, "add state");
  detail::require_cuda(y, DType::kBF16, "add update");
  OROCHI_CHECK(h.shape() == y.shape(), "add: ", h.describe(), " vs ", y.describe());
  detail::require_same_device(h, y, "add");
  return detail::launch_status(kernels::launch_add(bf16_data(h), bf16_data(y), h.numel(), stream), "add kernel");
}

Status cast(const Tensor& in, const Tensor& out, cudaStream_t stream) {
  OROCHI_CHECK(in.defined() && out.defined() && in.shape() == out.shape(), "cast: ",
               detail::describe_on_device(in), " to ", detail::describe_on_device(out));
  if (in.dtype() == DType::kF32 && out.dtype() == DType::kBF16) {
    detail::require_cuda(in, DType::kF32, "cast input");
    detail::require_cuda(out, DType::kBF16, "cast output");
    detail::require_same_device(in, out, "cast");
    return detail::launch_status(
        kernels::launch_cast_f32_to_bf16(static_cast<const float*>(in.raw_data()), bf16_data(out), in.numel(), stream),
        "cast f32->bf16 kernel");
  }
  OROCHI_CHECK(in.dtype() == DType::kBF16 && out.dtype() == DType::kF32, "cast: only f32 <-> bf16, got ",
               in.describe(), " to ", out.describe());
  detail::require_cuda(in, DType::kBF16, "cast input");
  detail::require_cuda(out, DType::kF32, "cast output");
  detail::require_same_device(in, out, "cast");
  return detail::launch_status(
      kernels::launch_cast_bf16_to_f32(bf16_data(in), static_cast<float*>(out.raw_data()), in.numel(), stream),
      "cast bf16->f32 kernel");
}

}  // namespace orochi::cuda
