// cuDNN's FP8 attention on bf16 operands (issue 25): the comparison for Orochi's own FP8 flash
// kernel and a fallback where that kernel does not run. Not wired into the engine.
//
// Per call: q, k, v [S, heads, D] bf16 are quantized per tensor to e4m3 (amax, then codes; with
// smooth_k, K minus its per-channel mean over keys first, SageAttention's smoothing: each score of
// a query row moves by the same q·mean, so the softmax is unchanged), the scalars P and O use are
// set (core/quantize_tensor.h), cuDNN runs on the codes, and an e4m3 O is dequantized into the
// bf16 output (cuDNN writes bf16 itself where it can: Blackwell, cuDNN >= 9.13).
//
// Everything lives in one caller-given device workspace (workspace_bytes); nothing is allocated
// but cuDNN's own workspace (CudnnAttention's rules). Launches only once the plan is built
// (prepare), so a call can be captured in a CUDA graph.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/attention_cudnn.h"
#include "core/status.h"

namespace orochi::cuda {

struct CudnnFp8AttentionOptions {
  bool smooth_k = false;  // subtract K's per-channel mean over keys before quantizing
};

// Byte offsets into the workspace, each 256-byte aligned.
struct CudnnFp8Workspace {
  // The f32 scalars, in this order from `scalars`.
  enum Scalar : int {
    kAmaxQ, kAmaxK, kAmaxV, kDescaleQ, kDescaleK, kDescaleV, kDescaleS, kScaleS, kScaleO, kDescaleO, kAmaxS, kAmaxO,
    kScalarCount
  };
  size_t q_codes = 0, k_codes = 0, v_codes = 0, o_codes = 0;  // e4m3 [S_q | S_kv, heads, D]
  size_t k_mean = 0, k_mean_partial = 0;                        // f32 [heads·D], [tiles, heads·D]
  size_t scalars = 0;                                           // f32 [kScalarCount]
  size_t bytes = 0;
};
CudnnFp8Workspace cudnn_fp8_workspace_layout(const AttentionShape& shape);

class CudnnFp8Attention {
 public:
  // Uses `cudnn`'s handle, plan cache and workspace (it must outlive this object).
  explicit CudnnFp8Attention(CudnnAttention& cudnn, CudnnFp8AttentionOptions options = {});

  // The device bytes run() needs beside cuDNN's own workspace. shape: the bf16 operands'.
  static size_t workspace_bytes(const AttentionShape& shape);

  // Builds the FP8 plan for `shape` (bf16 operands' shape: dtype kBF16, heads = kv heads,
  // non-causal) and loads its kernels. kUnsupported, with cuDNN's reasons and versions, where cuDNN
  // has no FP8 attention here.
  Status prepare(const AttentionShape& shape);
  // The dtype cuDNN writes O in for `shape` (kBF16 or kF8E4M3).
  Expected<DType> output_dtype(const AttentionShape& shape);

  // The two halves of run(), for timing: the codes and scalars, then cuDNN and O's dequantize.
  Status quantize(const void* q, const void* k, const void* v, const AttentionShape& shape, void* workspace,
                  cudaStream_t stream);
  Status attend(void* o, const AttentionShape& shape, void* workspace, cudaStream_t stream);
  // q, k, v, o bf16 [S, heads, D] device pointers, 16-byte aligned; workspace of workspace_bytes().
  Status run(const void* q, const void* k, const void* v, void* o, const AttentionShape& shape, void* workspace,
             cudaStream_t stream);

 private:
  CudnnAttention& cudnn_;
  CudnnFp8AttentionOptions options_;
};

}  // namespace orochi::cuda
