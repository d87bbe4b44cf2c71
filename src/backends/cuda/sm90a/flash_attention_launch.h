// Launcher of the sm_90a flash-attention kernel (flash_attention.cu, compiled for the
// arch-specific Hopper target). Callers go through attention_flash.h, which checks the shape and
// builds the tensor maps.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace orochi::cuda::sm90a {

struct FlashAttentionLaunch {
  CUtensorMap q, k, v;  // [S, heads, 128] bf16 as 3-D maps, boxes of 64 x 1 x rows, 128-byte swizzle:
                        // 128 rows for q, kv_block rows for k and v
  void* o = nullptr;    // [s_q, heads, 128] bf16
  int s_q = 0, s_kv = 0, heads = 0;
  bool pingpong = true;  // the two consumer warpgroups take turns issuing their MMAs
  int kv_block = 128;    // key/value rows per tile: 128 or 176
};

// Non-causal softmax(q k^T / sqrt(128)) v; one CTA per (128 query rows, head).
cudaError_t launch_flash_attention(const FlashAttentionLaunch& launch, cudaStream_t stream);

}  // namespace orochi::cuda::sm90a
