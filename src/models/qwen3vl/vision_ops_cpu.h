// The vision tower's own CPU steps (fp32), used by the reference forward (vision_model.cpp) and as
// the references of the GPU ops' tests (cuda/vision_ops.h).
#pragma once

#include "backends/cpu/ops.h"
#include "core/tensor.h"
#include "models/qwen3vl/vision_config.h"
#include "models/qwen3vl/vision_layout.h"

namespace orochi::qwen3vl {

// In place, torch's GELU of every value: the tanh approximation or the exact erf form.
void gelu_inplace(Tensor& x, VisionActivation activation);

// Σ_k table[index[4n+k]] · weight[4n+k] in fp32: table [P, C] of any float dtype -> f32 [N, C].
Tensor interpolated_positions(const Tensor& table, const PositionTaps& taps);

// qkv f32 [S, 3·heads·D] -> q, k, v f32 [S, heads, D], q and k rotated by `rope` (cos/sin [S, D]).
struct SplitHeads {
  Tensor q, k, v;
};
SplitHeads split_qkv_rope(const Tensor& qkv, int64_t heads, const cpu::RopeTable& rope);

}  // namespace orochi::qwen3vl
