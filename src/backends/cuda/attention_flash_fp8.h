// FP8 attention on Hopper (issue 25): q, k, v bf16 are quantized per tile by a pre-pass into a
// device workspace (e4m3 codes and f32 scales, core/attention_fp8_layout.h: Q per 128-row query
// tile, K minus its per-head mean per 128-key tile, V transposed with a scale per channel), then
// the sm_90a kernel computes softmax(q k^T / sqrt(128)) v with e4m3 wgmma for both GEMMs (P
// quantized to e4m3 too), bf16 out. The CPU reference is backends/cpu/attention_fp8.h.
// Shapes and layouts as flash_attention (attention_flash.h): q [S_q, heads, 128], k and v [S_kv,
// heads, 128], o [S_q, heads, 128], contiguous bf16, 16-byte aligned, non-causal, heads == kv heads.
//
// Stateless and graph-capturable: the caller owns the workspace (flash_attention_fp8_workspace_bytes).
// The engine runs it through layers::gpu::AttentionRunner (attention-precision, engine/run_switches.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "backends/cuda/attention_cudnn.h"
#include "backends/kernel_options.h"
#include "core/status.h"

namespace orochi::cuda {

// Why the FP8 kernel cannot run `shape` on the current device ("" when it can).
std::string flash_attention_fp8_unsupported_reason(const AttentionShape& shape);

// Device bytes of the codes and scales for `shape` (about (S_q + 2 S_kv) · heads · 128 bytes).
size_t flash_attention_fp8_workspace_bytes(const AttentionShape& shape);

struct FlashAttentionFp8Options {
  bool pingpong = true;    // the two consumer warpgroups alternate their MMAs
  int promote_every = 1;   // key tiles per P V group summed into O in f32: 1, 2, 4, or 0 (sm90a launch header)
  bool mma_sums = false;   // softmax denominators as sums of P's e4m3 codes by an MMA (ping-pong only)
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// The FP8 kernel's variants the engine's switches chose (workspace left empty).
FlashAttentionFp8Options flash_attention_fp8_options(const backends::KernelOptions& kernels);

// The pre-pass alone: q, k, v -> the workspace's codes and scales.
Status flash_attention_fp8_quantize(const void* q, const void* k, const void* v, const AttentionShape& shape,
                                    cudaStream_t stream, const FlashAttentionFp8Options& options);
// The kernel alone, from a workspace the pre-pass filled for the same shape.
Status flash_attention_fp8_from_workspace(void* o, const AttentionShape& shape, cudaStream_t stream,
                                          const FlashAttentionFp8Options& options);
// Both.
Status flash_attention_fp8(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
                           cudaStream_t stream, const FlashAttentionFp8Options& options);

}  // namespace orochi::cuda
