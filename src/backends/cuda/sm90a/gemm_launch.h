// Launcher of the sm_90a GEMM kernel (gemm.cu, compiled for the arch-specific Hopper target).
// Callers go through gemm_sm90a.h, which checks the operands and builds the tensor maps.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::sm90a {

enum class GemmEpilogue {
  kBias,    // y [M, N] = bf16(x w^T + bias)
  kSwiGLU,  // w = [value | gate] rows (N = 2I): y [M, I] = bf16(bf16(v) * bf16(silu(bf16(g)))), v and g
            // the two halves of x w^T + bias (the separate linear + swiglu kernels' rounding)
};

struct GemmLaunch {
  CUtensorMap x;  // [M, K] bf16, box 64 (K) x 128 rows, 128-byte swizzle
  CUtensorMap w;  // [N, K] bf16, box 64 (K) x 64 rows, 128-byte swizzle
  const void* bias = nullptr;  // [N] bf16 or null
  void* y = nullptr;           // [M, N] or [M, N / 2] bf16, rows y_stride elements apart
  int64_t y_stride = 0;
  int M = 0, N = 0, K = 0;
  GemmEpilogue epilogue = GemmEpilogue::kBias;
  int sm_count = 0;  // persistent CTAs: one per SM
};

// Persistent warp-specialized GEMM: one TMA producer warpgroup, two consumer warpgroups taking
// 128 x 128 output tiles in turn (one's epilogue under the other's MMAs).
cudaError_t launch_gemm(const GemmLaunch& launch, cudaStream_t stream);

}  // namespace orochi::cuda::sm90a
