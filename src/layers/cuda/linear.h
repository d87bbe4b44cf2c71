// A linear layer on the GPU, y = x · weight^T (+ bias), through the GEMM the run chose: Orochi's
// sm_90a kernel where it takes the operands (gemm=sm90a), else cuBLASLt; or, for a linear the run
// quantized (--precision fp8 / int8), x quantized per token and the quantized GEMM
// (backends/cuda/gemm_quantized.h). Family-neutral: any DiT's projections are GpuLinears.
#pragma once

#include "core/quantize.h"
#include "core/status.h"
#include "core/tensor.h"
#include "layers/cuda/layer_context.h"

namespace orochi::layers::gpu {

struct GpuLinear {
  Tensor weight;  // [out, in] device; undefined when the linear is quantized
  Tensor bias;    // [out] device, undefined when none
  // --precision fp8 / int8: the weight as codes [out, in] (f8e4m3 or i8) and one f32 scale per
  // output channel [out] (core/quantize.h); empty for a bf16 / f32 linear.
  RowQuantized quantized;
  bool is_quantized() const { return quantized.codes.defined(); }
};

// Where a quantized linear's activation goes: its codes and per-token scales, and the GEMM's
// accumulator for the paths that dequantize in their own epilogue (int8; fp8 where cuBLASLt
// refuses outer-vector scales). Planned with the request (one buffer each), reused by every linear.
struct QuantizedScratch {
  Tensor codes;        // [capacity] f8e4m3 or i8: one activation's codes, viewed [rows, in]
  Tensor scales;       // f32 [max rows]
  Tensor accumulator;  // f32 [elements]: [rows, out] in row chunks that fit
};

// y [rows, out] = x [rows, in] · l.weight^T + l.bias, on ctx.stream.
Status linear(const LayerContext& ctx, const GpuLinear& l, const Tensor& x, const Tensor& y);

// x [rows, in] bf16 (contiguous) quantized per token in `format` into ctx.quantized's buffers: a
// view of them, valid until the next quantization.
Expected<RowQuantized> quantize_activation(const LayerContext& ctx, const Tensor& x, DType format);
// ctx.quantized's buffers viewed as the codes [rows, in] and scales [rows] of one activation in
// `format`, for a kernel that quantizes the rows it produces (backends/cuda/ops_quantized_output.h)
// to write into; the same bytes quantize_activation writes, so valid until the next of either.
Expected<RowQuantized> activation_buffer(const LayerContext& ctx, int64_t rows, int64_t in, DType format);
// y [rows, out] bf16 = the quantized linear l of an activation already quantized (q, k and v share
// one quantization of their input; a producer kernel may have quantized it).
Status quantized_linear(const LayerContext& ctx, const GpuLinear& l, const RowQuantized& x, const Tensor& y);

}  // namespace orochi::layers::gpu
