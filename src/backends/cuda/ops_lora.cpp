#include "backends/cuda/ops_lora.h"

#include "backends/cuda/kernels/lora_merge.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {

Status lora_merge(const Tensor& weight, const Tensor& up, const Tensor& down, float scale, cudaStream_t stream) {
  OROCHI_CHECK(weight.defined() && (weight.dtype() == DType::kBF16 || weight.dtype() == DType::kF32) &&
                   weight.ndim() == 2,
               "lora_merge: the weight must be a 2-D bf16 or f32 CUDA tensor, got ", detail::describe_on_device(weight));
  detail::require_cuda(weight, weight.dtype(), "lora_merge weight");
  detail::require_cuda(up, DType::kF32, "lora_merge up");
  detail::require_cuda(down, DType::kF32, "lora_merge down");
  OROCHI_CHECK(up.ndim() == 2 && down.ndim() == 2 && up.dim(0) == weight.dim(0) && down.dim(1) == weight.dim(1) &&
                   up.dim(1) == down.dim(0) && up.dim(1) <= 512,
               "lora_merge: up ", up.describe(), " and down ", down.describe(), " for weight ", weight.describe(),
               " (rank at most 512)");
  detail::require_same_device(weight, up, "lora_merge");
  detail::require_same_device(weight, down, "lora_merge");
  return detail::launch_status(
      kernels::launch_lora_merge(weight.raw_data(), weight.dtype() == DType::kBF16, static_cast<const float*>(up.raw_data()),
                                 static_cast<const float*>(down.raw_data()), weight.dim(0), weight.dim(1), up.dim(1),
                                 scale, stream),
      "lora_merge kernel");
}

}  // namespace orochi::cuda
