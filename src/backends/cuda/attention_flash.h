// Orochi's own attention kernel for Hopper (sm_90a): FlashAttention-3-style warp-specialized
// forward with TMA loads and wgmma, for the denoiser's shape class only: head dim 128, bf16,
// non-causal, as many key/value heads as query heads. Layout as CudnnAttention's: q [S_q, heads,
// 128], k and v [S_kv, heads, 128], o [S_q, heads, 128], contiguous, 16-byte aligned.
//
// Stateless (no cached plans): each call builds three TMA descriptors on the host and launches one
// kernel, or three when it splits the last wave (below), so it can be captured in a CUDA graph
// from the first call.
//
// The last wave: the kernel runs one CTA per SM over units of 128 query rows of one head. When
// units % SMs leaves a last wave less than half full (832x480 on an H200: 6,608 units, 8 in the
// 51st wave), those units' key tiles are split over the idle SMs and combined by a small kernel,
// given a device workspace of flash_attention_workspace_bytes().
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "backends/cuda/attention_cudnn.h"
#include "backends/kernel_options.h"
#include "core/status.h"

namespace orochi::cuda {

// Why the kernel cannot run `shape` on the current device ("" when it can): wrong head dim, dtype,
// mask or grouped heads, or a GPU that is not compute capability 9.0.
std::string flash_attention_unsupported_reason(const AttentionShape& shape);

struct FlashAttentionOptions {
  bool pingpong = true;  // the two consumer warpgroups alternate their MMAs (the faster schedule)
  // Key/value rows per tile: 192 (on an H200 the 832x480 forward 0.8-1.0% faster than with 176,
  // FlashAttention-3's choice for head dim 128, which was 1-2% faster than 128), 176 or 128.
  int kv_block = 192;
  bool split_tail = true;       // split a sparse last wave's units (needs the workspace)
  // Lazy rescaling: a row's running max (and with it the output's rescale) moves only when a key
  // tile raises it by more than 2^8; off, it tracks the exact running max. Same softmax either way;
  // lazy made the forward 0.3-0.4% faster on an H200 (480p 3 alternating rounds, 768p one) with the
  // same error against diffusers' 50-layer forward (rel L2 8.35e-3 both).
  bool lazy_rescale = true;
  void* workspace = nullptr;    // device memory for the split units' partial results
  size_t workspace_bytes = 0;
  int sm_count = 0;             // 0: the current device's; tests set it to exercise the split anywhere
};

// The workspace a split last wave can need on a GPU with `sm_count` SMs (0: the current device's).
Expected<size_t> flash_attention_workspace_bytes(int sm_count = 0);

// The variants the run's switches chose (engine/run_switches.h: flash-kv-block, flash-pingpong,
// flash-split-tail, flash-rescale), without a workspace.
FlashAttentionOptions flash_attention_options(const backends::KernelOptions& kernels);

Status flash_attention(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape,
                       cudaStream_t stream, const FlashAttentionOptions& options = {});

}  // namespace orochi::cuda
