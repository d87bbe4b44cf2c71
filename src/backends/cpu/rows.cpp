// Row gather/scatter: how modality rows move into and out of the packed sequence.
#include <cstring>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {

Tensor gather_rows(const Tensor& x, const Tensor& idx) {
  detail::require_f32_contiguous(x, "gather source");
  OROCHI_CHECK(x.ndim() == 2, "gather source must be [S, C], got ", x.describe());
  const int64_t C = x.dim(1), n = idx.numel();
  const int64_t* pi = detail::checked_indices(idx, x.dim(0), "gather index");
  Tensor out = Tensor::empty({n, C}, DType::kF32);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out.data<float>() + i * C, x.data<float>() + pi[i] * C, C * sizeof(float));
  return out;
}

void scatter_rows(Tensor& dst, const Tensor& idx, const Tensor& src) {
  detail::require_f32_contiguous(dst, "scatter destination");
  detail::require_f32_contiguous(src, "scatter source");
  OROCHI_CHECK(dst.ndim() == 2 && src.ndim() == 2 && dst.dim(1) == src.dim(1) &&
                   src.dim(0) == idx.numel(),
               "scatter: dst ", dst.describe(), " src ", src.describe(), " idx ", idx.describe());
  const int64_t C = dst.dim(1);
  const int64_t* pi = detail::checked_indices(idx, dst.dim(0), "scatter index");
  for (int64_t i = 0; i < idx.numel(); ++i)
    std::memcpy(dst.data<float>() + pi[i] * C, src.data<float>() + i * C, C * sizeof(float));
}

}  // namespace orochi::cpu
