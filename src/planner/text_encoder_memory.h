// The Qwen3-VL text conditioner's memory (MODELS_H3.md §3): decoder layers up to the one H3 reads
// (50 of 64) and activations for the prompt's L tokens, as the GPU text encoder allocates them. It
// runs on one GPU whatever the request's layout (there is no parallel text encoder). At
// --set conditioner-precision=fp8 / int8 each layer's seven linears are 1-byte codes + f32
// per-channel scales (qwen3vl/cuda/gpu_text_layers.h), the activations add the quantized linears'
// codes, scales and accumulator, and loading a bf16 scratch of the largest linear; the vision
// tower stays bf16.
#pragma once

#include <vector>

#include "planner/h3_denoiser_memory.h"

namespace orochi::planner {

// "layer 0".."layer K-1" (each streamable), then "embedding", which stays in host RAM: only the L
// prompt rows are looked up and copied (Tier::kStreamedOnce); with `vision`, the vision tower
// (bf16, resident: 595 M parameters in the release) for keyframes and references.
std::vector<WeightGroup> text_encoder_weight_groups(const ModelConfigs& models, bool vision = false,
                                                   Precision precision = Precision::kBf16);

// `text_rows` is L (the presentation's tokens, vision pads included); `vision_patches` the patches
// the tower reads (0: none), whose activations it adds (an estimate of the GPU tower's arena).
std::vector<BufferBytes> text_encoder_buffers(const ModelConfigs& models, int64_t text_rows, int64_t vision_patches = 0,
                                             Precision precision = Precision::kBf16);

// The vision tower's parameters: patch embedding, position table, blocks, the merger and the
// DeepStack mergers.
int64_t vision_tower_parameters(const qwen3vl::VisionConfig& vision);

}  // namespace orochi::planner
