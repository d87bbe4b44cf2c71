// A linear layer on the GPU, y = x · weight^T (+ bias), through the GEMM the run chose: Orochi's
// sm_90a kernel where it takes the operands (gemm=sm90a), else cuBLASLt. Family-neutral: any DiT's
// projections are GpuLinears.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "layers/cuda/layer_context.h"

namespace orochi::layers::gpu {

struct GpuLinear {
  Tensor weight;  // [out, in] device
  Tensor bias;    // [out] device, undefined when none
};

// y [rows, out] = x [rows, in] · l.weight^T + l.bias, on ctx.stream.
Status linear(const LayerContext& ctx, const GpuLinear& l, const Tensor& x, const Tensor& y);

}  // namespace orochi::layers::gpu
