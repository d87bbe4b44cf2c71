// Launchers of the FP8 attention (issue 25): the pre-pass that quantizes bf16 q, k, v into the
// workspace of core/attention_fp8_layout.h (flash_attention_fp8_prepass.cu) and the sm_90a kernel
// that attends from it (flash_attention_fp8.cu). Callers go through attention_flash_fp8.h, which
// checks the shape and builds the tensor maps.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::sm90a {

struct AttentionFp8PrepassLaunch {
  const void *q = nullptr, *k = nullptr, *v = nullptr;  // bf16 [s_q, heads, 128], [s_kv, heads, 128] x2
  uint8_t* workspace = nullptr;                          // fp8_attention_layout(heads, s_q, s_kv).bytes
  int s_q = 0, s_kv = 0, heads = 0;
};

// Five small kernels: k's per-tile sums and v's per-tile amax, their reduction (k's mean, v's
// channel scales), then Q, K - mean and V^T codes with their scales.
cudaError_t launch_attention_fp8_prepass(const AttentionFp8PrepassLaunch& launch, cudaStream_t stream);

struct FlashAttentionFp8Launch {
  // e4m3 codes as 2-D u8 maps with 128 x 128-byte boxes and the 128-byte swizzle: q [heads *
  // q_tiles * 128, 128], k [heads * k_tiles * 128, 128], v^T [heads * 128, k_tiles * 128].
  CUtensorMap q, k, vt;
  const float *q_scale = nullptr, *k_scale = nullptr, *v_scale = nullptr;  // [heads, q_tiles], [heads, k_tiles], [heads, 128]
  void* o = nullptr;                                                      // [s_q, heads, 128] bf16
  int s_q = 0, s_kv = 0, heads = 0;
  bool pingpong = true;  // the two consumer warpgroups take turns issuing their MMAs
  // P V of each group of `promote_every` key tiles (1, 2 or 4) goes to a fresh accumulator that is
  // added to O in f32 registers: the tensor cores' FP8 accumulation keeps fewer bits than f32 and
  // truncates (DeepSeek-V3's report), which adds up over hundreds of key tiles. 0: accumulate into
  // O directly. Without ping-pong only 1 or 0.
  int promote_every = 1;
  // The softmax denominators: each thread's f32 exponentials added and reduced over the quad
  // (false), or sums of P's e4m3 codes by a wgmma against an all-ones tile (true; ping-pong only).
  bool mma_sums = false;
};

// Non-causal softmax(q k^T / sqrt(128)) v from the pre-pass's codes, bf16 out.
cudaError_t launch_flash_attention_fp8(const FlashAttentionFp8Launch& launch, cudaStream_t stream);

}  // namespace orochi::cuda::sm90a
