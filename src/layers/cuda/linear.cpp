#include "layers/cuda/linear.h"

#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_sm90a.h"

namespace orochi::layers::gpu {

Status linear(const LayerContext& ctx, const GpuLinear& l, const Tensor& x, const Tensor& y) {
  const Tensor* bias = l.bias.defined() ? &l.bias : nullptr;
  if (ctx.gemm_sm90a && cuda::gemm_sm90a_unsupported_reason(x, l.weight, bias, y, cuda::GemmSm90aEpilogue::kBias).empty())
    return cuda::gemm_sm90a(x, l.weight, bias, y, cuda::GemmSm90aEpilogue::kBias, ctx.stream);
  return ctx.gemm->linear(x, l.weight, bias, y, ctx.stream);
}

}  // namespace orochi::layers::gpu
