// The Qwen3-VL decoder layers' weights on one GPU: how one layer's tensors are laid out (the same
// layout in the resident weight arena and in a staging slot, so a streamed layer's bytes are one
// contiguous "image"), how they are filled from host weights (through the staged uploader) or with
// counter-based random values, and how they are read back for writing a checkpoint.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/staged_upload.h"
#include "models/qwen3vl/text_weights.h"

namespace orochi::qwen3vl::gpu {

struct GpuTextLayer {
  Tensor input_norm, post_norm;  // [hidden]
  Tensor q, k, v, o;             // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]
  Tensor q_norm, k_norm;         // [head_dim]
  Tensor up_gate;                // [2 · intermediate, hidden]: rows [up; gate] for the SwiGLU kernel
  Tensor down;                   // [hidden, intermediate]
};

// Bytes of one layer's bf16 tensors as allocate_layer() lays them out (each piece arena-aligned).
size_t layer_image_bytes(const TextConfig& config);
// One layer's tensors, allocated in `arena` in the image layout.
Expected<GpuTextLayer> allocate_layer(const TextConfig& config, cuda::DeviceArena& arena);

// Queues host layer `h` into `l` (bf16; any float dtype converts on the way).
Status upload_layer(const TextLayerWeights& h, const GpuTextLayer& l, int64_t intermediate,
                    cuda::StagedUploader& uploader);
// Counter-based random values (see GpuTextEncoder::init_random); `stream_id` advances per tensor.
Status fill_random_layer(const GpuTextLayer& l, uint64_t seed, uint64_t& stream_id, cudaStream_t stream);
// The layer's tensors under the checkpoint's names (`prefix` "layers.{i}." included), on the host.
Expected<std::vector<std::pair<std::string, Tensor>>> download_layer(const GpuTextLayer& l, const std::string& prefix,
                                                                    int64_t intermediate, cudaStream_t stream);

}  // namespace orochi::qwen3vl::gpu
