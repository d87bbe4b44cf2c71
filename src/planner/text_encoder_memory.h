// The Qwen3-VL text conditioner's memory (MODELS_H3.md §3): bf16 decoder layers up to the one H3
// reads (50 of 64) and activations for the prompt's L tokens, as the GPU text encoder allocates
// them. It runs on one GPU whatever the request's layout (there is no parallel text encoder).
#pragma once

#include <vector>

#include "planner/h3_denoiser_memory.h"

namespace orochi::planner {

// "layer 0".."layer K-1" (each streamable), then "embedding", which stays in host RAM: only the L
// prompt rows are looked up and copied (Tier::kStreamedOnce).
std::vector<WeightGroup> text_encoder_weight_groups(const ModelConfigs& models);

std::vector<BufferBytes> text_encoder_buffers(const ModelConfigs& models, int64_t text_rows);

}  // namespace orochi::planner
