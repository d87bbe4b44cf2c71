// Which kernel variants a GPU model runs, chosen once by the engine's options layer
// (engine/run_switches.h) and passed down: nothing below it reads the environment. The defaults are
// the measured winners (bench/RESULTS.md); the others stay for side-by-side timing.
#pragma once

#include "core/precision.h"

namespace orochi::backends {

// Q·K^T and P·V of the denoiser's attention: bf16, or e4m3 with per-tile scales (Orochi's sm_90a
// FP8 kernel, backends/cuda/attention_flash_fp8.h). auto: fp8 when the linears run fp8
// (--precision fp8), bf16 otherwise; bf16 keeps attention exact while the linears run FP8.
enum class AttentionPrecision { kAuto, kBf16, kFp8 };

struct KernelOptions {
  // Attention of the denoiser: Orochi's sm_90a flash kernel where the shape and GPU allow it (else
  // cuDNN), or cuDNN's fused SDPA everywhere.
  bool flash_attention = true;
  // The flash kernel's variants (backends/cuda/attention_flash.h FlashAttentionOptions).
  int flash_kv_block = 192;  // 128, 176 or 192 key rows per tile
  bool flash_pingpong = true;
  bool flash_split_tail = true;
  bool flash_lazy_rescale = true;
  // Orochi's persistent wgmma GEMM for the denoiser's linears (13% slower than cuBLASLt at 480p).
  bool gemm_sm90a = false;
  // cuBLASLt: the fastest of its top candidates timed once per shape, or its first pick.
  bool gemm_timed_pick = true;
  // q/k norm + RoPE for head dim 128: one block per sequence row, or one warp per head (items).
  bool qk_norm_items = false;
  // --precision fp8 / int8: the norms and SwiGLU quantize the rows they write per token for the
  // quantized linear after them (same codes), or a separate quantize pass per linear (off).
  bool fused_quantization = true;
  // --precision fp8: cuBLASLt's FP8 GEMMs with CUBLASLT_MATMUL_DESC_FAST_ACCUM (the MMA's partial
  // sums not promoted to f32 every few K steps): 8-9% faster per block's linears on an H200 at the
  // same per-GEMM error next to e4m3's rounding (bench/RESULTS.md, FP8 and INT8 GEMMs); the whole
  // 768p forward 3% faster at the same distance to bf16 (2.653e-2 vs 2.651e-2, session 19).
  bool fp8_gemm_fast_accum = true;
  AttentionPrecision attention_precision = AttentionPrecision::kAuto;
  // The FP8 attention kernel's P V: the products of each group of this many key tiles promoted to an
  // f32 sum (the tensor cores' FP8 accumulator keeps fewer bits and truncates), or (0) accumulated
  // in place. 1, 2, 4 or 0. Session 19 (bench/RESULTS.md), 768p forward with the mma sums: every 4
  // tiles 4.166 s at bf16's 2.651e-2, per tile 4.198 s; never 4.000 s but 3.04e-2 from bf16 (and
  // 8.8e-2 instead of 5.3e-2 from exact at 106k keys in the kernel test).
  int fp8_attention_promote_every = 4;
  // Its softmax denominators: sums of P's e4m3 codes computed by the tensor cores (one m64n8 MMA
  // against ones per key tile: no per-score add; the weights P V uses), or f32 sums of the
  // exponentials (false). Needs the ping-pong schedule: flash-pingpong=0 falls back to f32 sums.
  bool fp8_attention_mma_sums = true;

  // Whether the denoiser's attention runs in FP8 with linears in `linears`: the one place that
  // resolves attention-precision=auto (runner, planner and report all ask here).
  // attention=cudnn (or the generic path) keeps auto on cuDNN's bf16 attention.
  bool fp8_attention(Precision linears) const {
    return attention_precision == AttentionPrecision::kFp8 ||
           (attention_precision == AttentionPrecision::kAuto && linears == Precision::kFp8 && flash_attention);
  }
};

}  // namespace orochi::backends
