// The ops' overloads that allocate their output from a DeviceArena.
#include "backends/cuda/ops.h"

namespace orochi::cuda {

Expected<Tensor> rms_norm(const Tensor& x, const Tensor& weight, float eps, DeviceArena& arena,
                          cudaStream_t stream) {
  OROCHI_ASSIGN_OR_RETURN(Tensor out, arena.tensor(x.shape(), DType::kBF16));
  OROCHI_RETURN_IF_ERROR(rms_norm(x, weight, eps, out, stream));
  return out;
}

Expected<Tensor> rms_norm_modulate(const Tensor& x, const Tensor& weight, float eps, const Tensor& shift,
                                   const Tensor& scale, const Tensor& idx, DeviceArena& arena, cudaStream_t stream) {
  OROCHI_ASSIGN_OR_RETURN(Tensor out, arena.tensor(x.shape(), DType::kBF16));
  OROCHI_RETURN_IF_ERROR(rms_norm_modulate(x, weight, eps, shift, scale, idx, out, stream));
  return out;
}

Expected<Tensor> swiglu(const Tensor& u, DeviceArena& arena, cudaStream_t stream) {
  Shape shape = u.shape();
  OROCHI_CHECK(!shape.empty(), "swiglu input must have a last dim");
  shape.back() /= 2;
  OROCHI_ASSIGN_OR_RETURN(Tensor out, arena.tensor(shape, DType::kBF16));
  OROCHI_RETURN_IF_ERROR(swiglu(u, out, stream));
  return out;
}

Expected<Tensor> gather_rows(const Tensor& x, const Tensor& idx, DeviceArena& arena, cudaStream_t stream) {
  OROCHI_CHECK(x.ndim() == 2, "gather source must be [S, C], got ", x.describe());
  OROCHI_ASSIGN_OR_RETURN(Tensor out, arena.tensor({idx.numel(), x.dim(1)}, x.dtype()));
  OROCHI_RETURN_IF_ERROR(gather_rows(x, idx, out, stream));
  return out;
}

Expected<Tensor> cast(const Tensor& in, DType target, DeviceArena& arena, cudaStream_t stream) {
  OROCHI_ASSIGN_OR_RETURN(Tensor out, arena.tensor(in.shape(), target));
  OROCHI_RETURN_IF_ERROR(cast(in, out, stream));
  return out;
}

}  // namespace orochi::cuda
