// The Qwen3-VL decoder layers' weights on one GPU: how one layer's tensors are laid out (the same
// layout in the resident weight arena and in a staging slot, so a streamed layer's bytes are one
// contiguous "image"), how they are filled from host weights (through the staged uploader) or with
// counter-based random values, and how they are read back for writing a checkpoint.
// At --set conditioner-precision=fp8 / int8 the seven linears (q, k, v, o, [up; gate], down) are
// held as codes + per-output-channel f32 scales (core/quantize.h), quantized on the GPU from the
// bf16 values the bf16 encoder would hold; the norms stay bf16.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/staged_upload.h"
#include "core/precision.h"
#include "layers/cuda/linear.h"
#include "models/qwen3vl/text_weights.h"

namespace orochi::qwen3vl::gpu {

using layers::gpu::GpuLinear;

struct GpuTextLayer {
  Tensor input_norm, post_norm;  // [hidden]; input_norm is the image's first bytes
  GpuLinear q, k, v, o;          // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]
  Tensor q_norm, k_norm;         // [head_dim]
  GpuLinear up_gate;             // [2 · intermediate, hidden]: rows [up; gate] for the SwiGLU kernel
  GpuLinear down;                // [hidden, intermediate]
};

// Bytes of one layer's tensors as allocate_layer() lays them out (each piece arena-aligned): bf16,
// or for fp8 / int8 the linears' 1-byte codes and f32 scales.
size_t layer_image_bytes(const TextConfig& config, Precision precision = Precision::kBf16);
// One layer's tensors, allocated in `arena` in the image layout.
Expected<GpuTextLayer> allocate_layer(const TextConfig& config, cuda::DeviceArena& arena,
                                      Precision precision = Precision::kBf16);
// Elements of the largest linear ([up; gate]): the bf16 scratch a quantized layer is made in.
int64_t largest_linear_elements(const TextConfig& config);

// How a layer's linears are made: a bf16 linear in place; a quantized one in `bf16_scratch` (a
// device bf16 tensor of at least largest_linear_elements(); undefined for bf16 layers) and then
// quantized per output channel into its codes and scales, on `stream`.
struct LayerFill {
  Tensor bf16_scratch;
  cudaStream_t stream = nullptr;
};

// Queues host layer `h` into `l` (bf16; any float dtype converts on the way). A quantized linear's
// values are uploaded, quantized and waited for one linear at a time (the scratch is reused).
Status upload_layer(const TextLayerWeights& h, const GpuTextLayer& l, cuda::StagedUploader& uploader,
                    const LayerFill& fill = {});
// Counter-based random values (see GpuTextEncoder::init_random); `stream_id` advances per tensor,
// the same streams at every precision (a quantized layer is the quantization of the bf16 one).
Status fill_random_layer(const GpuTextLayer& l, uint64_t seed, uint64_t& stream_id, const LayerFill& fill);
// The layer's tensors under the checkpoint's names (`prefix` "layers.{i}." included), on the host.
// bf16 layers only (a quantized layer is refused: its bf16 values are gone).
Expected<std::vector<std::pair<std::string, Tensor>>> download_layer(const GpuTextLayer& l, const std::string& prefix,
                                                                    int64_t intermediate, cudaStream_t stream);

}  // namespace orochi::qwen3vl::gpu
