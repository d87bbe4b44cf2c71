// The Qwen3-VL text conditioner's memory on one computing GPU (MODELS_H3.md §3): bf16 decoder
// layers up to the one H3 reads (50 of 64), activations for the prompt's L tokens. There is no GPU
// text encoder yet; the buffers are those a bf16 forward with flash attention needs.
#pragma once

#include <vector>

#include "planner/h3_denoiser_memory.h"

namespace orochi::planner {

// "layer 0".."layer K-1" (tp N splits q/k/v/o and the MLP), then "embedding", which stays in host
// RAM: only the L prompt rows are looked up and copied (Tier::kStreamedOnce).
std::vector<WeightGroup> text_encoder_weight_groups(const ModelConfigs& models, const ParallelLayout& layout);

std::vector<BufferBytes> text_encoder_buffers(const ModelConfigs& models, int64_t text_rows,
                                              const ParallelLayout& layout);

// tp N needs N to divide the query and key/value heads; sp N (Ulysses) the key/value heads.
Status check_text_encoder_layout(const ModelConfigs& models, const ParallelLayout& layout);

}  // namespace orochi::planner
