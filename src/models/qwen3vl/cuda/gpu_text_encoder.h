// The Qwen3-VL text decoder stack on one GPU (bf16, as transformers runs it in bf16): embeddings ->
// `layers` decoder layers (RMSNorm rounding the normalized row before the weight as transformers'
// Qwen3 RMSNorm does; q/k/v GEMMs; per-head q/k RMSNorm fused with the M-RoPE rotation; causal
// grouped-query cuDNN attention; o GEMM; residual; RMSNorm; [up; gate] GEMM; SwiGLU; down GEMM;
// residual) -> the residual stream after the last layer, which is what MiniMax-H3 conditions on
// (hidden_states[50] of the 64-layer 32B model). Layers past `layers`, the final norm, the LM head
// and the vision tower are never loaded.
//
// Memory is planned: one arena for the weights, one for the activations of up to `max_tokens`
// tokens, both sized at create().
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "models/qwen3vl/text_weights.h"

namespace orochi::qwen3vl::gpu {

struct GpuTextLayer {
  Tensor input_norm, post_norm;  // [hidden]
  Tensor q, k, v, o;             // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]
  Tensor q_norm, k_norm;         // [head_dim]
  Tensor up_gate;                // [2 · intermediate, hidden]: rows [up; gate] for the SwiGLU kernel
  Tensor down;                   // [hidden, intermediate]
};

// Bytes of the bf16 weights of the first `layers` layers plus the embedding table.
size_t text_weight_bytes(const TextConfig& config, int64_t layers);

struct TextActivations;  // gpu_text_encoder.cpp

class GpuTextEncoder {
 public:
  static Expected<std::unique_ptr<GpuTextEncoder>> create(const TextConfig& config, int64_t layers, int device,
                                                          int64_t max_tokens);
  ~GpuTextEncoder();
  GpuTextEncoder(const GpuTextEncoder&) = delete;
  GpuTextEncoder& operator=(const GpuTextEncoder&) = delete;

  // Host weights (any float dtype) with at least `layers` layers, rounded to bf16 on upload.
  Status upload(const TextWeights& host);
  // Counter-based random weights of the config's shapes, generated on the GPU (benchmarks and the
  // comparison with transformers): embedding N(0, 1), matrices N(0, 0.5 / sqrt(fan_in)), norms
  // 1 + N(0, 0.05). The fan-in scale keeps the residual stream near unit size through 50 layers;
  // transformers' N(0, 0.02) init grows it to rms 30, where bf16 rounding differences between any
  // two implementations are amplified layer after layer (measured: 5.7e-2 at 50 layers).
  Status init_random(uint64_t seed);

  // Token ids i64 [L] with text positions 0..L-1 (or explicit M-RoPE positions i64 [L, 3]) ->
  // the residual stream after the last loaded layer, host f32 [L, hidden].
  Expected<Tensor> encode_text(const Tensor& token_ids);
  Expected<Tensor> encode(const Tensor& token_ids, const Tensor& positions);

  const TextConfig& config() const { return config_; }
  int64_t layers() const { return layers_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
  size_t activation_bytes() const { return activation_arena_ ? activation_arena_->capacity() : 0; }

 private:
  GpuTextEncoder() = default;
  Status run_layer(const GpuTextLayer& layer, int64_t L);

  TextConfig config_;
  int64_t layers_ = 0, max_tokens_ = 0;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  std::unique_ptr<cuda::CudnnAttention> attention_;
  Tensor embed_tokens_;  // [vocab, hidden]
  std::vector<GpuTextLayer> layer_weights_;
  std::unique_ptr<TextActivations> act_;
  bool has_weights_ = false;
};

}  // namespace orochi::qwen3vl::gpu
