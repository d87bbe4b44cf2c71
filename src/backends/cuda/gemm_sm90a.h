// Orochi's own bf16 GEMM for Hopper (sm_90a): y = x w^T (+ bias), as GemmRunner::linear computes
// it, or fused with the SwiGLU that follows the H3 FFN's first linear (w = [value | gate] rows:
// y = bf16(v · bf16(silu(g))) from the bf16-rounded halves, the rounding of linear + swiglu).
// Persistent, warp-specialized, TMA + wgmma (sm90a/gemm.cu). Experimental: the denoiser uses it
// only under OROCHI_GEMM=sm90a.
//
// Operands: x [M, K] and w [N, K] bf16, rows contiguous, K a multiple of 8, 16-byte aligned;
// bias [N] bf16 or null; y bf16 [M, N] (or [M, N / 2] for SwiGLU) with rows y.stride(0) apart.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

enum class GemmSm90aEpilogue { kBias, kSwiGLU };

// Why the kernel cannot take these operands on the current device ("" when it can).
std::string gemm_sm90a_unsupported_reason(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                                          GemmSm90aEpilogue epilogue);

Status gemm_sm90a(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, GemmSm90aEpilogue epilogue,
                  cudaStream_t stream);

}  // namespace orochi::cuda
