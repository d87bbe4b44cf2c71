// The Qwen3-VL text decoder stack on one GPU (bf16, as transformers runs it in bf16): embeddings ->
// `layers` decoder layers (RMSNorm rounding the normalized row before the weight as transformers'
// Qwen3 RMSNorm does; q/k/v GEMMs; per-head q/k RMSNorm fused with the M-RoPE rotation; causal
// grouped-query cuDNN attention; o GEMM; residual; RMSNorm; [up; gate] GEMM; SwiGLU; down GEMM;
// residual) -> the residual stream after the last layer, which is what MiniMax-H3 conditions on
// (hidden_states[50] of the 64-layer 32B model). Layers past `layers`, the final norm, the LM head
// and the vision tower are never loaded.
// With precision fp8 / int8 (--set conditioner-precision) the seven linears of every layer are
// held quantized per output channel (gpu_text_layers.h) and run as layers::gpu::linear's quantized
// linear: each input quantized per token (q, k and v share one quantization), the same
// QuantizedGemmRunner as the denoiser's; qwen3vl::emulate_quantization is its CPU reference.
//
// Memory is planned (planner/text_encoder_memory.h): one arena for the resident layers and the
// staging slots, one for the activations of up to `max_tokens` tokens, both sized at create().
// The embedding table stays in host RAM (1.5 GB of which a prompt reads L rows). Layers the plan
// streams live in pinned host RAM or on a peer GPU and come through the staging slots just in
// time (weights/cuda/gpu_block_tier.h), as the denoiser's blocks do.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_quantized.h"
#include "core/precision.h"
#include "layers/cuda/layer_context.h"
#include "layers/cuda/linear.h"
#include "backends/cuda/staged_upload.h"
#include "models/qwen3vl/cuda/gpu_text_layers.h"
#include "models/qwen3vl/text_model.h"
#include "models/qwen3vl/text_weights.h"
#include "weights/block_streamer.h"
#include "weights/cuda/gpu_block_tier.h"

namespace orochi::qwen3vl::gpu {

// Which layers stream, from where, through how many slots.
struct TextStreaming {
  std::vector<bool> streamed;  // per loaded layer; empty: every layer resident
  int slots = 2;
  weights::WeightTier tier = weights::WeightTier::kHost;
  int peer_device = -1;        // the GPU holding them, for WeightTier::kPeer
  bool any() const;
};

// Bytes of the weights of the first `layers` layers on the GPU at `precision` (resident layers plus
// the staging slots when some stream); the embedding table stays on the host.
size_t text_weight_bytes(const TextConfig& config, int64_t layers, const TextStreaming& streaming = {},
                         Precision precision = Precision::kBf16);

struct TextActivations;  // gpu_text_encoder.cpp

class GpuTextEncoder {
 public:
  static Expected<std::unique_ptr<GpuTextEncoder>> create(const TextConfig& config, int64_t layers, int device,
                                                          int64_t max_tokens, const TextStreaming& streaming = {},
                                                          Precision precision = Precision::kBf16);
  ~GpuTextEncoder();
  GpuTextEncoder(const GpuTextEncoder&) = delete;
  GpuTextEncoder& operator=(const GpuTextEncoder&) = delete;

  // Host weights (any float dtype; zero-copy checkpoint views are fine) with at least `layers`
  // layers, rounded to bf16 on upload through pinned staging buffers. The embedding table is kept
  // as a view, so `host` (or the checkpoint it maps) must outlive the encoder.
  Status upload(const TextWeights& host);
  // Counter-based random weights of the config's shapes, generated on the GPU (benchmarks and the
  // comparison with transformers): embedding N(0, 1), matrices N(0, 0.5 / sqrt(fan_in)), norms
  // 1 + N(0, 0.05). The fan-in scale keeps the residual stream near unit size through 50 layers;
  // transformers' N(0, 0.02) init grows it to rms 30, where bf16 rounding differences between any
  // two implementations are amplified layer after layer (measured: 5.7e-2 at 50 layers).
  Status init_random(uint64_t seed);
  // Writes the loaded weights as a Qwen3VLTextModel checkpoint folder (config.json and one
  // safetensors file per layer plus the embedding, with an index), bf16. Every layer resident, and
  // a bf16 encoder (a quantized one is refused).
  Status write_checkpoint(const std::string& folder) const;

  // Token ids i64 [L] with text positions 0..L-1 (or explicit M-RoPE positions i64 [L, 3]) ->
  // the residual stream after the last loaded layer, host f32 [L, hidden].
  Expected<Tensor> encode_text(const Tensor& token_ids);
  Expected<Tensor> encode(const Tensor& token_ids, const Tensor& positions);
  // A mixed sequence (text_model.h's encode_mixed): the vision features replace the pad rows'
  // embeddings (rounded to the table's dtype, as transformers casts them to the embeddings'), and
  // DeepStack feature k is added at those rows (a bf16 add) after layer k when a layer follows.
  // The features and DeepStack tensors may be host tensors or contiguous tensors on this GPU (the
  // GPU vision tower's output, bf16 or f32), which then never leave it.
  Expected<Tensor> encode(const Tensor& token_ids, const Tensor& positions, const VisionEmbeddings& vision);

  const TextConfig& config() const { return config_; }
  int64_t layers() const { return layers_; }
  Precision precision() const { return precision_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
  size_t activation_bytes() const { return activation_arena_ ? activation_arena_->capacity() : 0; }
  size_t tier_bytes() const { return tier_ ? tier_->tier_bytes() : 0; }  // streamed layers' home
  const cuda::UploadStats& upload_stats() const { return upload_stats_; }
  const weights::StreamStats* stream_stats() const { return streamer_ ? &streamer_->stats() : nullptr; }

 private:
  GpuTextEncoder() = default;
  Status run_layer(const GpuTextLayer& layer, int64_t L);
  // h[rows] = bf16(h[rows] + bf16(feature)), through the activation scratch (free between layers).
  Status add_at_vision_rows(const Tensor& feature, int64_t V);
  Expected<Tensor> vision_on_device(const Tensor& t, const Tensor& scratch);
  // Lays out the resident layers and the slots; streamed layers get their slot-0 view to fill.
  Status allocate_layers();
  // What layers::gpu::linear runs on: this encoder's stream, GEMM runners and quantized buffers.
  layers::gpu::LayerContext layer_context() const;
  // After the layers were filled: streamed ones (built in slot 0 one at a time) go to the tier.
  Status start_streaming();

  TextConfig config_;
  int64_t layers_ = 0, max_tokens_ = 0;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  TextStreaming streaming_;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  Precision precision_ = Precision::kBf16;
  std::unique_ptr<cuda::QuantizedGemmRunner> quantized_gemm_;  // fp8 / int8 only
  layers::gpu::QuantizedScratch quantized_scratch_;            // in the activation arena
  std::unique_ptr<cuda::CudnnAttention> attention_;
  Tensor embed_tokens_;  // host [vocab, hidden], any float dtype
  std::vector<GpuTextLayer> layer_weights_;  // resident layers (streamed ones: unused entries)
  std::vector<GpuTextLayer> slot_layers_;    // one per staging slot
  std::unique_ptr<weights::GpuBlockTier> tier_;
  std::optional<weights::BlockStreamer> streamer_;
  std::unique_ptr<TextActivations> act_;
  cuda::UploadStats upload_stats_;
  bool has_weights_ = false;
};

}  // namespace orochi::qwen3vl::gpu
