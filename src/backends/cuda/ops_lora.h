// A LoRA's update merged into a weight that already lives on the GPU (random weights of the real
// shapes have no host copy to merge into).
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// weight [O, I] (bf16 or f32, CUDA) += scale · up [O, r] · down [r, I] (f32, CUDA, r <= 512), with the
// host merge's sums and roundings (h3::merge_lora): the same bits.
Status lora_merge(const Tensor& weight, const Tensor& up, const Tensor& down, float scale, cudaStream_t stream);

}  // namespace orochi::cuda
