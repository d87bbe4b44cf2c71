// The MiniMax-H3 denoiser forward (CPU reference) over one packed sequence of S rows:
// [text | conditioning | audio | video] in any order the caller packs, given by index lists.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3/weights.h"

namespace orochi::h3 {

// One request's packed layout and rows (batch 1). Index tensors are i64.
struct H3Inputs {
  Tensor video;              // f32 [Nv, video_patch_dim], rows in video_indices order
  Tensor audio;              // f32 [Na, audio_in_channels]
  Tensor text;               // f32 [L, text_dim]
  Tensor timestep_indices;   // [S]: row -> index into the modulation tables' timesteps
  Tensor token_tags;         // [S]: 0 video, 1 text, 2 audio
  Tensor positions;          // f32 [S, 3] rotary (t, h, w)
  Tensor video_indices;      // [Nv] rows of S
  Tensor audio_indices;      // [Na]
  Tensor text_indices;       // [L]
  int64_t rows() const { return positions.defined() ? positions.dim(0) : 0; }
};

// AdaLN tables for a set of timesteps. They depend only on t, so a request computes them once
// for every distinct t of its schedule and each forward only indexes them.
struct ModulationTables {
  Tensor timesteps;           // f32 [n_t]
  Tensor temb;                // f32 [n_t, time_embed_dim] (curve form: the table's lerp, no SiLU)
  std::vector<Tensor> blocks; // per block f32 [n_t * 3, 6H]: shift/scale/gate msa, shift/scale/gate mlp
  Tensor final;               // f32 [n_t, 2H]: shift | scale
};

struct H3Outputs {
  Tensor video;  // f32 [Nv, video_patch_dim]: velocity x0 - noise, rows as in video_indices
  Tensor audio;  // f32 [Na, audio_in_channels]
};

// Sees every named intermediate ("packed", "block.3", ...) for debugging and golden tests.
using H3Observer = std::function<void(const std::string& name, const Tensor& value)>;

// Checks shapes, dtypes, index ranges, that the index lists partition [0, S) and that tags and
// timestep indices are valid for `num_timesteps` tables. User-facing: says what is wrong.
Status validate_inputs(const H3Config& config, const H3Inputs& in, int64_t num_timesteps);

ModulationTables compute_modulation_tables(const H3Weights& w, const Tensor& timesteps,
                                           const H3Observer& observer = nullptr);

Expected<H3Outputs> forward(const H3Weights& w, const H3Inputs& in, const ModulationTables& tables,
                            const H3Observer& observer = nullptr);

}  // namespace orochi::h3
