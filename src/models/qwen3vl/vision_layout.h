// What the vision tower derives from the grids alone, shared by the CPU and GPU forwards
// (transformers 5.24's vision_utils: get_vision_interpolation_indices_and_weights,
// get_vision_position_ids, get_vision_cu_seqlens). Patches are in the processor's merge order:
// (t, block_row, block_col, intra_row, intra_col).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/ops.h"
#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/vision_config.h"
#include "models/qwen3vl/vision_grid.h"

namespace orochi::qwen3vl {

// pixel_values must be f32 (or bf16) [sum of grid patches, C·tp·p·p]; each grid positive with h and
// w multiples of the merge size. invalid_argument / shape_mismatch say which grid or dim is wrong.
Status validate_vision_inputs(const VisionConfig& config, const Tensor& pixel_values, const std::vector<GridThw>& grids);

// The learned side x side position table resampled bilinearly (align_corners) to each grid: per
// patch 4 table rows (floor/ceil row x floor/ceil column) and their fp32 weights, computed as
// transformers does (src = i·(side−1)/(n−1) in fp32, weights 1 − |src − tap|, products of the row
// and column weights). The embedding is Σ_k table[index[4n+k]] · weight[4n+k].
struct PositionTaps {
  std::vector<int64_t> index;  // [N, 4]
  std::vector<float> weight;   // [N, 4]
};
PositionTaps position_taps(const VisionConfig& config, const std::vector<GridThw>& grids);

// 2-D RoPE over a whole head (rotate-half, pairs (i, i + D/2)): per patch the angles
// [row·inv (D/4) | col·inv (D/4)] twice, inv_k = 1 / theta^(2k / (D/2)), in fp32, as cos and sin
// f32 [N, D] (cpu::apply_rope's table). Every frame of a video reuses the frame's (row, col).
cpu::RopeTable vision_rope_table(const VisionConfig& config, const std::vector<GridThw>& grids);

// Attention segments (cu_seqlens' lengths): h·w patches per image and per temporal block of a video.
std::vector<int64_t> attention_segments(const std::vector<GridThw>& grids);

}  // namespace orochi::qwen3vl
