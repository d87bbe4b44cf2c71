#include "layers/cuda/linear.h"

#include <string>

#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_quantized.h"
#include "backends/cuda/gemm_sm90a.h"
#include "backends/cuda/quantize.h"

namespace orochi::layers::gpu {

Status linear(const LayerContext& ctx, const GpuLinear& l, const Tensor& x, const Tensor& y) {
  if (l.is_quantized()) {
    OROCHI_ASSIGN_OR_RETURN(const RowQuantized xq, quantize_activation(ctx, x, l.quantized.codes.dtype()));
    return quantized_linear(ctx, l, xq, y);
  }
  const Tensor* bias = l.bias.defined() ? &l.bias : nullptr;
  if (ctx.gemm_sm90a && cuda::gemm_sm90a_unsupported_reason(x, l.weight, bias, y, cuda::GemmSm90aEpilogue::kBias).empty())
    return cuda::gemm_sm90a(x, l.weight, bias, y, cuda::GemmSm90aEpilogue::kBias, ctx.stream);
  return ctx.gemm->linear(x, l.weight, bias, y, ctx.stream);
}

Expected<RowQuantized> activation_buffer(const LayerContext& ctx, int64_t rows, int64_t in, DType format) {
  OROCHI_CHECK(ctx.quantized != nullptr && ctx.quantized_gemm != nullptr,
               "a quantized linear in a run without quantized buffers (the runner's precision is bf16)");
  const QuantizedScratch& s = *ctx.quantized;
  if (rows * in > s.codes.numel() || rows > s.scales.numel() || s.codes.dtype() != format)
    return Status(ErrorCode::kInternal, "quantized linear: an activation [" + std::to_string(rows) + ", " +
                                            std::to_string(in) + "] of " + dtype_name(format) +
                                            " does not fit the planned codes buffer " + s.codes.describe() + " / " +
                                            s.scales.describe());
  RowQuantized q;
  q.codes = s.codes.slice(0, 0, rows * in).view({rows, in});  // [rows, in]
  q.scales = s.scales.slice(0, 0, rows);                      // [rows]
  return q;
}

Expected<RowQuantized> quantize_activation(const LayerContext& ctx, const Tensor& x, DType format) {
  OROCHI_ASSIGN_OR_RETURN(RowQuantized q, activation_buffer(ctx, x.dim(0), x.dim(1), format));
  OROCHI_RETURN_IF_ERROR(cuda::quantize_rows(x, q, ctx.stream));
  return q;
}

Status quantized_linear(const LayerContext& ctx, const GpuLinear& l, const RowQuantized& x, const Tensor& y) {
  const Tensor* bias = l.bias.defined() ? &l.bias : nullptr;
  return ctx.quantized_gemm->linear(x, l.quantized, bias, y, ctx.quantized->accumulator, ctx.stream,
                                    {.fast_accum = ctx.fp8_fast_accum});
}

}  // namespace orochi::layers::gpu
