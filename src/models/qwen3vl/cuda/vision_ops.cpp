#include "models/qwen3vl/cuda/vision_ops.h"

#include "backends/cuda/op_checks.h"
#include "models/qwen3vl/cuda/vision_kernels.h"

namespace orochi::qwen3vl::gpu {
namespace {

using cuda::detail::bf16_data;
using cuda::detail::launch_status;
using cuda::detail::require_cuda;
using cuda::detail::require_same_device;

}  // namespace

Status layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out,
                  cudaStream_t stream) {
  require_cuda(x, DType::kBF16, "vision layer_norm input");
  require_cuda(weight, DType::kBF16, "vision layer_norm weight");
  require_cuda(bias, DType::kBF16, "vision layer_norm bias");
  require_cuda(out, DType::kBF16, "vision layer_norm output");
  OROCHI_CHECK(x.ndim() == 2 && out.shape() == x.shape() && weight.numel() == x.dim(1) && bias.numel() == x.dim(1),
               "vision layer_norm: x ", x.describe(), " out ", out.describe(), " weight ", weight.describe());
  require_same_device(x, out, "vision layer_norm");
  return launch_status(kernels::launch_layer_norm(bf16_data(x), bf16_data(weight), bf16_data(bias), bf16_data(out),
                                                  x.dim(0), x.dim(1), eps, stream),
                       "vision layer_norm kernel");
}

Status gelu_inplace(const Tensor& x, bool tanh_approximation, cudaStream_t stream) {
  require_cuda(x, DType::kBF16, "vision gelu input");
  return launch_status(kernels::launch_gelu(bf16_data(x), x.numel(), tanh_approximation, stream), "vision gelu kernel");
}

Status qkv_split_rope(const Tensor& qkv, const Tensor& cos, const Tensor& sin, const Tensor& q, const Tensor& k,
                      const Tensor& v, cudaStream_t stream) {
  require_cuda(q, DType::kBF16, "vision q");
  require_cuda(k, DType::kBF16, "vision k");
  require_cuda(v, DType::kBF16, "vision v");
  require_cuda(qkv, DType::kBF16, "vision qkv");
  require_cuda(cos, DType::kF32, "vision rope cos");
  require_cuda(sin, DType::kF32, "vision rope sin");
  OROCHI_CHECK(q.ndim() == 3 && k.shape() == q.shape() && v.shape() == q.shape(), "vision q/k/v ", q.describe(), " ",
               k.describe(), " ", v.describe());
  const int64_t S = q.dim(0), H = q.dim(1), D = q.dim(2);
  OROCHI_CHECK(D % 2 == 0 && qkv.numel() == S * 3 * H * D && cos.numel() == S * D && sin.numel() == S * D,
               "vision qkv ", qkv.describe(), " cos ", cos.describe(), " for q ", q.describe());
  require_same_device(qkv, q, "vision qkv_split_rope");
  return launch_status(
      kernels::launch_qkv_split_rope(bf16_data(qkv), static_cast<const float*>(cos.raw_data()),
                                     static_cast<const float*>(sin.raw_data()), bf16_data(q), bf16_data(k),
                                     bf16_data(v), S, H, D, stream),
      "vision qkv_split_rope kernel");
}

Status add_position_embeddings(const Tensor& x, const Tensor& table, const Tensor& index, const Tensor& weight,
                               cudaStream_t stream) {
  require_cuda(x, DType::kBF16, "vision patch embeddings");
  require_cuda(table, DType::kBF16, "vision position table");
  require_cuda(index, DType::kI64, "vision position taps");
  require_cuda(weight, DType::kF32, "vision position weights");
  OROCHI_CHECK(x.ndim() == 2 && table.ndim() == 2 && table.dim(1) == x.dim(1) && index.numel() == 4 * x.dim(0) &&
                   weight.numel() == 4 * x.dim(0),
               "vision add_position_embeddings: x ", x.describe(), " table ", table.describe(), " index ",
               index.describe(), " weight ", weight.describe());
  require_same_device(x, table, "vision add_position_embeddings");
  return launch_status(kernels::launch_add_position_embeddings(bf16_data(x), bf16_data(table),
                                                               static_cast<const int64_t*>(index.raw_data()),
                                                               static_cast<const float*>(weight.raw_data()), x.dim(0),
                                                               x.dim(1), stream),
                       "vision add_position_embeddings kernel");
}

}  // namespace orochi::qwen3vl::gpu
