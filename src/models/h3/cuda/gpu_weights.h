// The MiniMax-H3 transformer's weights on one GPU: bf16 block linears and norms, f32 islands
// (patch projections, time MLP, heads) as the checkpoint keeps them. The AdaLN projections are not
// resident: they only feed the per-request modulation tables (gpu_tables.h). With --precision fp8
// or int8 the block linears h3::is_quantized_linear names are held as codes + per-output-channel
// f32 scales (core/quantize.h) instead of bf16, in the resident arena and in streamed blocks' images.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "core/precision.h"
#include "layers/cuda/linear.h"
#include "models/h3/config.h"
#include "models/h3/tensor_parallel.h"
#include "models/h3/weights.h"

namespace orochi::h3::gpu {

// The shared layers' linear (layers/cuda/linear.h): weight [out, in], bias [out] or undefined.
using layers::gpu::GpuLinear;

struct GpuBlock {
  Tensor norm1, norm2, norm_q, norm_k;  // bf16
  GpuLinear to_q, to_k, to_v, to_out, ff_in, ff_out;  // bf16 or quantized (transformer blocks), no bias
};

struct GpuWeights {
  H3Config config;
  GpuLinear proj_in, audio_proj_in;        // f32
  GpuLinear context_embedder;              // bf16
  GpuLinear time_linear_1, time_linear_2;  // f32; undefined in the curve form
  Tensor adaln_t_table;                    // f32 [G, r]: the curve form's table (adaln_curve.h), else undefined
  std::vector<GpuBlock> refiner;
  Tensor refiner_final_norm;               // bf16
  std::vector<GpuBlock> blocks;
  Tensor norm_out;                         // bf16
  GpuLinear proj_out, audio_proj_out;      // f32
};

// A tensor-parallel rank holds only its share of each block's linears (tensor_parallel.h); the
// whole model is tp_share(config, 0, 1).
inline TpShare whole_model(const H3Config& config) { return tp_share(config, 0, 1); }

// Transformer blocks whose weights are not resident but streamed (weights/cuda/gpu_block_tier.h): the weight
// builders put each such block in `staging` from its start, then call `store(block, image,
// bytes)` before the next block overwrites it; their GpuWeights::blocks entries stay empty.
struct StreamedBlocks {
  std::vector<bool> streamed;  // per transformer block
  cuda::DeviceArena* staging = nullptr;
  std::function<Status(int64_t block, const void* image, size_t bytes)> store;
};

// Bytes the resident weights (of one TP share) take on the GPU (no AdaLN, no streamed block), for
// the weight arena.
size_t resident_weight_bytes(const H3Config& config, const TpShare& share, const std::vector<bool>& streamed = {},
                             Precision precision = Precision::kBf16);
// Bytes of one transformer block's weights laid out as in a staging slot (its "image").
size_t block_image_bytes(const H3Config& config, const TpShare& share, Precision precision = Precision::kBf16);
// One block's tensors allocated in `arena` in the image's layout: a staging slot's view.
Expected<GpuBlock> allocate_block(const H3Config& config, const TpShare& share, cuda::DeviceArena& arena,
                                  Precision precision = Precision::kBf16);

// Writes one AdaLN projection (block index, or -1 for norm_out.linear) as bf16 into `weight`
// [out, time_embed_dim] and `bias` [out]: from a checkpoint, or generated.
using AdalnSource = std::function<Status(int64_t block, const Tensor& weight, const Tensor& bias)>;

// Random weights of the real shapes, generated on the GPU with the counter-based RNG (no host
// copy, no checkpoint): the `orochi bench dit` model. Norms 1 + N(0, 0.1), biases N(0, 0.05),
// matrices N(0, 0.8 / sqrt(fan_in)) so activations stay finite through 50 blocks.
// A TP share draws the whole tensor and keeps its slice, so every layout holds the same model.
// `precision` fp8 / int8: each quantized linear is made in bf16 first (in a scratch arena freed
// after loading) and quantized per output channel from those bf16 values.
Expected<GpuWeights> random_gpu_weights(const H3Config& config, cuda::DeviceArena& arena, uint64_t seed,
                                        cudaStream_t stream, const TpShare& share,
                                        const StreamedBlocks* streamed = nullptr,
                                        Precision precision = Precision::kBf16);
AdalnSource random_adaln_source(const H3Config& config, uint64_t seed, cudaStream_t stream);

// Uploads host weights (f32, or bf16 as stored) into the arena, rounding bf16 parts to nearest
// even; with fp8 / int8 the quantized linears are quantized from those bf16 values (after any
// LoRA, which the host merges before the upload).
Expected<GpuWeights> upload_gpu_weights(const H3Weights& host, cuda::DeviceArena& arena, cudaStream_t stream,
                                        const TpShare& share, const StreamedBlocks* streamed = nullptr,
                                        Precision precision = Precision::kBf16);
AdalnSource host_adaln_source(const H3Weights& host, cudaStream_t stream);

}  // namespace orochi::h3::gpu
