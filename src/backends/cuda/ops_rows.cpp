// Row gather/scatter on Tensors: how modality rows move into and out of the packed sequence.
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/op_checks.h"
#include "backends/cuda/ops.h"

namespace orochi::cuda {
namespace {

void require_rows(const Tensor& t, const char* what) {
  OROCHI_CHECK(t.defined() && t.device().kind == DeviceKind::kCUDA && t.ndim() == 2 && t.is_contiguous(), what,
               " must be a contiguous 2-D CUDA tensor, got ", detail::describe_on_device(t));
}

}  // namespace

Status gather_rows(const Tensor& x, const Tensor& idx, const Tensor& out, cudaStream_t stream) {
  require_rows(x, "gather source");
  require_rows(out, "gather output");
  const int64_t n = idx.numel(), C = x.dim(1);
  OROCHI_CHECK(out.dtype() == x.dtype() && out.dim(0) == n && out.dim(1) == C, "gather: source ", x.describe(),
               ", ", n, " indices, output ", out.describe());
  const int64_t* pi = detail::require_indices(idx, n, "gather index");
  detail::require_same_device(x, out, "gather");
  const int64_t row_bytes = C * static_cast<int64_t>(dtype_size(x.dtype()));
  return detail::launch_status(
      kernels::launch_copy_rows(out.raw_data(), row_bytes, nullptr, x.raw_data(), row_bytes, pi, n, row_bytes, stream),
      "gather_rows kernel");
}

Status scatter_rows(const Tensor& dst, const Tensor& idx, const Tensor& src, cudaStream_t stream) {
  require_rows(dst, "scatter destination");
  require_rows(src, "scatter source");
  const int64_t n = idx.numel(), C = dst.dim(1);
  OROCHI_CHECK(src.dtype() == dst.dtype() && src.dim(0) == n && src.dim(1) == C, "scatter: destination ",
               dst.describe(), ", ", n, " indices, source ", src.describe());
  const int64_t* pi = detail::require_indices(idx, n, "scatter index");
  detail::require_same_device(dst, src, "scatter");
  const int64_t row_bytes = C * static_cast<int64_t>(dtype_size(dst.dtype()));
  return detail::launch_status(kernels::launch_copy_rows(dst.raw_data(), row_bytes, pi, src.raw_data(), row_bytes,
                                                         nullptr, n, row_bytes, stream),
                               "scatter_rows kernel");
}

}  // namespace orochi::cuda
