// The video VAE decoder's weights on one GPU, in the dtypes its fp16-autocast decode reads them:
// matrices, biases and register tokens f16 (autocast casts them per linear; we cast once, nearest
// even as torch does), the norm weights and LayerScale vectors f32 (the norms and the residual
// stream stay fp32). All of it lives in one DeviceArena.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "core/status.h"
#include "models/h3_video_vae/weights.h"

namespace orochi::h3vae::gpu {

struct GpuLinear {
  Tensor weight;  // [out, in] f16
  Tensor bias;    // [out] f16
};

struct GpuBlock {
  Tensor norm1, norm2;              // [D] f32
  GpuLinear to_q, to_k, to_v, to_out;
  Tensor scale1, scale2;            // [D] f32 LayerScale
  GpuLinear ff_in;                  // [2F, D], rows [value; gate]
  GpuLinear ff_out;                 // [D, F]
};

struct GpuDecoderWeights {
  VideoVaeConfig config;
  GpuLinear post_quant_conv;        // [C, C]
  GpuLinear proj_in;                // [D, C]
  Tensor register_tokens;           // [R, D] f16 (the reference casts them to the f16 token stream)
  std::vector<GpuBlock> blocks;
  Tensor norm_out_weight, norm_out_bias;  // [D] f32
  GpuLinear proj_out;               // [out_ch·pt·p·p, D]
};

// Bytes of the weight arena for `config` (2.42 B parameters, about 4.9 GB, in the release).
size_t gpu_weight_bytes(const VideoVaeConfig& config);
// Elements of the largest parameter: the scratch init_random_gpu_weights needs (as f32).
int64_t largest_parameter(const VideoVaeConfig& config);

// Copies host weights (f32, e.g. from load_decoder_weights) into `arena`, converting on the host.
// Refuses weights of another config or with a missing tensor, naming it.
Expected<GpuDecoderWeights> upload_gpu_weights(const DecoderWeights& host, cuda::DeviceArena& arena,
                                               cudaStream_t stream);

// Random weights of the config's shapes generated on the GPU (counter-based RNG, one stream per
// parameter in decoder_parameters() order), for benchmarks: matrices N(0, 0.8/sqrt(fan_in)), biases
// N(0, 0.02), norm weights N(1, 0.05), LayerScale N(0.1, 0.02), registers N(0, 1), so activations
// stay finite (and f16-representable) through 36 blocks. `scratch` is f32 device memory of at least
// largest_parameter(config) elements, used to draw f16 parameters before casting them.
Expected<GpuDecoderWeights> init_random_gpu_weights(const VideoVaeConfig& config, cuda::DeviceArena& arena,
                                                    const Tensor& scratch, uint64_t seed, cudaStream_t stream);

}  // namespace orochi::h3vae::gpu
