// The block ops whose output a quantized linear reads next, quantizing that output per token in
// the same kernel (issue 25): no separate quantize_rows pass over the activation. Each is its
// ops.h namesake plus `q`: codes [S, C] (f8e4m3 or i8) and scales [S] f32, bit for bit what
// quantize_rows (quantize.h) gives for the bf16 output the namesake writes. `out` is written too
// when defined and skipped when undefined (the linear reads only the codes); it must not alias the
// input. Conventions as ops.h.
#pragma once

#include <cuda_runtime_api.h>

#include "core/quantize.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// rms_norm_modulate(x, ...) -> out, q.
Status rms_norm_modulate_quantized(const Tensor& x, const Tensor& weight, float eps, const Tensor& shift,
                                   const Tensor& scale, const Tensor& idx, const Tensor& out, const RowQuantized& q,
                                   cudaStream_t stream);

// gated_residual_rms_norm_modulate(h, ...) -> h updated in place, out, q.
Status gated_residual_rms_norm_modulate_quantized(const Tensor& h, const Tensor& gate, const Tensor& y,
                                                  const Tensor& weight, float eps, const Tensor& shift,
                                                  const Tensor& scale, const Tensor& idx, const Tensor& out,
                                                  const RowQuantized& q, cudaStream_t stream);

// swiglu(u [M, 2I]) -> out [M, I], q.
Status swiglu_quantized(const Tensor& u, const Tensor& out, const RowQuantized& q, cudaStream_t stream);

}  // namespace orochi::cuda
