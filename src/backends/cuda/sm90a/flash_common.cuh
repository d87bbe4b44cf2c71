// Pieces the bf16 and the FP8 flash-attention kernels (flash_attention.cu, flash_attention_fp8.cu)
// share: their pipeline barriers, the fast exp2, the bf16 output packing and the per-row softmax
// state with its output rescale. Both kernels keep the accumulator fragment of a 64 x N wgmma:
// thread (warp w, lane l) holds, for n8 block i, rows r = 16w + l/4 and r + 8, columns
// 8i + 2(l%4) + {0, 1}: s[4i + {0,1}] on row r, s[4i + {2,3}] on row r + 8.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/sm90a/wgmma.cuh"

namespace orochi::cuda::sm90a {

// The mbarriers of a kernel's ring of kStages K and V tiles, and of its Q tile.
template <int kStages>
struct FlashBarriers {
  uint64_t q_full;
  uint64_t k_full[kStages], v_full[kStages], k_empty[kStages], v_empty[kStages];

  // One thread: the loads arrive once per fill; every consumer warp releases a stage once.
  __device__ __forceinline__ void init(int consumer_warps) {
    mbarrier_init(&q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&k_full[s], 1);
      mbarrier_init(&v_full[s], 1);
      mbarrier_init(&k_empty[s], consumer_warps);
      mbarrier_init(&v_empty[s], consumer_warps);
    }
    mbarrier_init_fence();
  }
};

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// A thread's two rows (r and r + 8) of the online softmax.
struct RowState {
  float max0 = -INFINITY, max1 = -INFINITY;  // running (with a rescale threshold: lazy) max of the scaled (log2) scores
  float sum0 = 0, sum1 = 0;                  // this thread's part of the running denominators (the FP8
                                             // kernel's mma row sums: the whole row's, in all 4 of the quad)
};

// o *= factor per row, skipped when no row of the warp moved its max (with a rescale threshold,
// nearly every tile after the first): a warp-uniform branch, so the MMA issue never diverges.
__device__ __forceinline__ void rescale_output(float (&o)[64], float factor0, float factor1) {
  if (__all_sync(0xffffffff, factor0 == 1.f && factor1 == 1.f)) return;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    o[4 * i] *= factor0;
    o[4 * i + 1] *= factor0;
    o[4 * i + 2] *= factor1;
    o[4 * i + 3] *= factor1;
  }
}

}  // namespace orochi::cuda::sm90a
