// The Qwen3-VL vision tower on one GPU in bf16 (transformers' bf16 Qwen3VLVisionModel, as diffusers
// runs it): pixel values rounded to bf16 -> patch embedding (a cuBLASLt GEMM with bias) -> + the
// interpolated positions (fp32 sum, rounded) -> blocks (LayerNorm; qkv GEMM; q/k 2-D RoPE in fp32;
// cuDNN attention once per segment: each image and each temporal block of a video attends only
// to itself; proj GEMM; residual; LayerNorm; fc1 GEMM; GELU; fc2 GEMM; residual) -> DeepStack
// mergers and the 2x2 merger (LayerNorm, fc1, erf GELU, fc2). Same outputs as the CPU reference
// (vision_model.h), within the bf16 band.
//
// Memory: one arena for the weights (595 M parameters in the release: 1.2 GB) and one for the
// activations of up to `max_patches` patches, both made at create(); cuDNN's attention workspace
// grows inside its own object with each new segment length.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "models/qwen3vl/vision_model.h"

namespace orochi::qwen3vl::gpu {

// Bytes of the tower's bf16 weights on the GPU, and of the activations for `max_patches` patches.
size_t vision_weight_bytes(const VisionConfig& config);
size_t vision_activation_bytes(const VisionConfig& config, int64_t max_patches);

struct VisionGpuWeights;      // gpu_vision_tower.cpp
struct VisionGpuMerger;       // gpu_vision_tower.cpp
struct VisionGpuActivations;  // gpu_vision_tower.cpp

class GpuVisionTower {
 public:
  static Expected<std::unique_ptr<GpuVisionTower>> create(const VisionConfig& config, int device, int64_t max_patches);
  ~GpuVisionTower();
  GpuVisionTower(const GpuVisionTower&) = delete;
  GpuVisionTower& operator=(const GpuVisionTower&) = delete;

  // Host weights of this config (any float dtype; zero-copy checkpoint views are fine), rounded to
  // bf16 on upload.
  Status upload(const VisionWeights& host);
  // Counter-based random weights of the config's shapes generated on the GPU (benchmarks and the
  // full-size comparison with transformers): the rules of random_weights.h, the same model as
  // upload(random_vision_weights(config, seed)).
  Status init_random(uint64_t seed);

  // pixel_values host f32 or bf16 [N, 3·tp·p·p] (N <= max_patches) with the processor's grids ->
  // host f32 features and DeepStack features, as run_vision_tower returns them.
  // Errors: those of validate_vision_inputs, invalid_argument when N exceeds max_patches, internal
  // before upload(), and CUDA / cuDNN / cuBLASLt failures.
  Expected<VisionFeatures> run(const Tensor& pixel_values, const std::vector<GridThw>& grids);
  // The same, leaving the outputs on this GPU: bf16 [M, out] views of the tower's activation arena
  // (what GpuTextEncoder::encode takes as device VisionEmbeddings), complete when this returns and
  // valid until the next run. To keep
  // images and videos on the GPU together, pass all their grids in one call (the rows follow the
  // grids, and attention never crosses a grid) and slice the rows per modality.
  Expected<VisionFeatures> run_on_device(const Tensor& pixel_values, const std::vector<GridThw>& grids);

  const VisionConfig& config() const { return config_; }
  int64_t max_patches() const { return max_patches_; }
  cudaStream_t stream() const { return stream_; }

 private:
  GpuVisionTower() = default;
  Status run_block(size_t index, int64_t N, const std::vector<int64_t>& segments);
  Status run_merger(const VisionGpuMerger& m, int64_t N, const Tensor& out);

  VisionConfig config_;
  int device_ = 0;
  int64_t max_patches_ = 0;
  bool has_weights_ = false;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  std::unique_ptr<cuda::CudnnAttention> attention_;
  std::unique_ptr<VisionGpuWeights> weights_;
  std::unique_ptr<VisionGpuActivations> act_;
};

}  // namespace orochi::qwen3vl::gpu
