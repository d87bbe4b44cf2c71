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
  int kv_block = 128;    // key/value rows per tile: 128, 176 or 192
  // A row's running max moves only when a tile's max exceeds it by more than 2^8 (in exp2 terms),
  // which skips most rescales of the output (flash_attention.cu); false: the exact running max.
  bool lazy_rescale = false;
  // Work units (128 query rows of one head, numbered head-major) this launch covers.
  int unit_begin = 0, units = 0;
  // > 1: each unit's key tiles in that many slices, one CTA each, their partial results (in
  // `partial`: units * kv_splits * flash_attention_partial_bytes()) combined by a second kernel.
  int kv_splits = 1;
  float* partial = nullptr;
};

// Device bytes of one slice's partial result.
int flash_attention_partial_bytes();

// Non-causal softmax(q k^T / sqrt(128)) v over the launch's units.
cudaError_t launch_flash_attention(const FlashAttentionLaunch& launch, cudaStream_t stream);

}  // namespace orochi::cuda::sm90a
