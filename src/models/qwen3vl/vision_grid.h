// Counts that follow from a vision input's patch grid (GridThw, models/qwen3vl/multimodal_tokens.h:
// transformers' image_grid_thw / video_grid_thw): the processor makes the grid, the vision tower
// reads it, and the text stack's M-RoPE positions and the presentation's pad runs follow from it.
#pragma once

#include <cstdint>

#include "models/qwen3vl/multimodal_tokens.h"

namespace orochi::qwen3vl {

// Patches (rows of pixel_values and of the tower's blocks).
inline int64_t patch_count(const GridThw& g) { return g.t * g.h * g.w; }
// Rows of the tower's output (and pad tokens in the prompt): one per merge x merge patches.
inline int64_t token_count(const GridThw& g, int64_t merge_size) { return patch_count(g) / (merge_size * merge_size); }

}  // namespace orochi::qwen3vl
