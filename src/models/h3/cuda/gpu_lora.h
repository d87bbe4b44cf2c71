// LoRAs merged into H3 weights that already live on the GPU: `orochi bench dit --lora` on random
// weights of the real shapes, which have no host copy for h3::merge_lora. The sums and roundings
// are the host merge's (cuda::lora_merge), so a GPU merge equals uploading the host merge.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "models/h3/cuda/gpu_weights.h"
#include "models/h3/lora.h"

namespace orochi::h3::gpu {

// Merges `lora` at `strength` into `weights` (one GPU's whole model: no TP share, no streamed block)
// and wraps `adaln` so the AdaLN projections it writes per request get their deltas too. A delta
// for a parameter these weights do not hold is refused by name.
Status merge_lora_on_gpu(GpuWeights& weights, AdalnSource& adaln, const H3Lora& lora, float strength,
                         cudaStream_t stream);

}  // namespace orochi::h3::gpu
