// The Qwen3-VL vision tower forward (CPU reference, fp32), transformers 5.24's Qwen3VLVisionModel:
//   patch embedding (the Conv3d as a linear over [N, 3·2·16·16] patches)
//   + the learned position table resampled bilinearly to each grid
//   -> blocks: x += proj(attn(LN1 x)) with 2-D RoPE on q, k and attention confined to each image
//      and each temporal block of a video; x += fc2(GELU(fc1(LN2 x)))
//   -> DeepStack mergers after the configured blocks, the 2x2 merger after the last.
// Returns per merged token (4 patches) the features [M, out_hidden] the text stack scatters into
// the image/video pad rows, and the DeepStack features [M, out_hidden] it adds after decoder
// layers 0, 1, 2 (one per config.deepstack_visual_indexes entry, in block order). Rows follow the
// grids' order, so with both images and videos call once per modality (as transformers does).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/vision_grid.h"
#include "models/qwen3vl/vision_weights.h"

namespace orochi::qwen3vl {

struct VisionFeatures {
  Tensor features;                 // f32 [M, out_hidden], M = Σ token_count(grid, merge)
  std::vector<Tensor> deepstack;   // f32 [M, out_hidden] each
};

// Sees every named intermediate (a view valid during the call only: clone what you keep):
//   "patch_embed"   [N, hidden]  the Conv3d output
//   "pos_embed"     [N, hidden]  the interpolated position embeddings
//   "rope.cos", "rope.sin"  [N, head_dim]
//   "blocks.{i}"    [N, hidden]  the output of block i
//   "deepstack.{k}" [M, out]     DeepStack merger k's output
//   "merger"        [M, out]     the final merger's output (= features)
using VisionObserver = std::function<void(const std::string& name, const Tensor& value)>;

// pixel_values f32 or bf16 [N, 3·tp·p·p] as the processor makes them, grids in the same order.
// Errors: shape_mismatch / invalid_argument from validate_vision_inputs.
Expected<VisionFeatures> run_vision_tower(const VisionWeights& weights, const Tensor& pixel_values,
                                          const std::vector<GridThw>& grids, const VisionObserver& observer = nullptr);

}  // namespace orochi::qwen3vl
