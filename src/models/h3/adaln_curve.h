// The pruned "curve-form" AdaLN (MODELS_H3.md §7; Comfy-Org's `*_pruned_*` H3 files): the time MLP is
// gone, and a table `adaln_t_table` [G, r] (f32) holds the AdaLN projections' input at G evenly spaced
// timesteps t_g = g / (G - 1); `blocks.i.adaln_proj.linear` is [18H, r] and
// `final_layer.adaln_proj.linear` [2H, r]. The SiLU is dropped (the table holds what the projections
// read). temb(t) is the lerp of rows i0 and i0 + 1 at pos = clamp(t, 0, 1)·(G - 1),
// i0 = min(floor(pos), G - 2). This is an approximation of the released model's time MLP: equal at
// the grid points when the table was sampled from it, not between them, and never bit-equal to
// diffusers. G and r are read from the table's shape (H3Config::adaln_curve_points, time_embed_dim).
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3/checkpoint_layout.h"
#include "models/h3/config.h"
#include "weights/checkpoint.h"

namespace orochi::h3 {

inline constexpr const char* kAdalnTableKey = "adaln_t_table";

// Whether the checkpoint holds the curve form (its table key, under the layout's prefix).
bool has_adaln_curve(const weights::Checkpoint& checkpoint, const KeyLayout& layout);

// `config` for a curve-form checkpoint: adaln_curve_points = G and time_embed_dim = r from the
// table's header (no data read). Refused naming the key: a table that is not a 2-D float tensor or
// has fewer than 2 rows.
Status apply_adaln_curve(const weights::Checkpoint& checkpoint, const KeyLayout& layout, H3Config& config);

// The AdaLN input at each timestep: f32 [n_t, r] from `table` f32 [G, r] and `timesteps` f32 [n_t].
Tensor adaln_curve_input(const Tensor& table, const Tensor& timesteps);

// One line for notes and reports: the table's size and that it is an approximation.
std::string describe_adaln_curve(const H3Config& config);

}  // namespace orochi::h3
