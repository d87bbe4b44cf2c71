// Launchers of the block kernels that quantize the rows they produce, per token, for the quantized
// linear that reads them next (issue 25): the RMSNorm (+ gated residual, + AdaLN modulation) of
// rms_norm.cu and SwiGLU (swiglu_quantized.cu). Each writes, besides or instead of its bf16 output,
// codes and one f32 scale per row that are bit for bit launch_quantize_rows_bf16's of the bf16 row
// the plain launcher writes: the same bf16 rounding of each value first, then the same amax, scale,
// inverse and codes (quantize_device.cuh), so a forward gives the same bits fused or not.
// `y` / `out` null: the bf16 row is not written (the linear reads only the codes). The output must
// not alias the input (the codes pass reads the input again). Codes are kE4M3 or kI8 (other codes:
// cudaErrorInvalidValue, as launch_quantize_rows_bf16).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/quantize_kernels.h"

namespace orochi::cuda::kernels {

// Where a kernel's per-token quantization goes: codes [rows, C] (one byte each), scales [rows].
struct RowCodes {
  QuantCode code = QuantCode::kE4M3;
  uint8_t* codes = nullptr;
  float* scales = nullptr;
};

// launch_rms_norm (diffusers' rounding; `mod` optional), its output rows also quantized into q.
cudaError_t launch_rms_norm_quantized(const bf16* x, const bf16* w, bf16* y, const RowCodes& q, int64_t rows, int64_t C,
                                      float eps, const ModulationRows* mod, cudaStream_t stream);

// launch_gated_residual_rms_norm (h updated in place as there), its output rows also quantized into q.
cudaError_t launch_gated_residual_rms_norm_quantized(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                                     const bf16* y, const bf16* w, bf16* out, const RowCodes& q,
                                                     int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                                                     cudaStream_t stream);

// launch_swiglu (u [M, 2I] -> out [M, I]), its output rows also quantized into q.
cudaError_t launch_swiglu_quantized(const bf16* u, bf16* out, const RowCodes& q, int64_t M, int64_t I,
                                    cudaStream_t stream);

}  // namespace orochi::cuda::kernels
