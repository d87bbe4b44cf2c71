// The tensor-parallel linear whose output is a partial sum over the TP group (a row-split
// attention out-projection or FFN-out): computed in chunks of rows, each chunk's all_reduce on the
// comm stream under the next chunk's GEMM, so only the last chunk's reduction is exposed.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "dist/comm.h"
#include "layers/cuda/layer_context.h"
#include "layers/cuda/linear.h"

namespace orochi::layers::gpu {

// y [rows, out] bf16 = sum over `tp` of x [rows, in / tp] · l.weight^T (this rank's input columns).
// A null `tp` (one rank): the linear alone. `stage` names the GEMM in the profile and in errors.
// The compute stream waits for the last all_reduce before returning.
Status tp_reduced_linear(const LayerContext& ctx, dist::Comm* tp, const GpuLinear& l, const Tensor& x, const Tensor& y,
                         const char* stage);

}  // namespace orochi::layers::gpu
