#include "pipeline/random_inputs.h"

#include "core/random.h"

namespace orochi::pipeline {

h3::H3Inputs random_h3_inputs(const h3::H3Config& config, const PackedLayout& layout, const RowTimesteps& timesteps,
                              uint64_t seed) {
  h3::H3Inputs in;
  in.video = normal_tensor({layout.video_indices.numel(), config.video_patch_dim()}, seed, 1);
  in.audio = normal_tensor({layout.audio_indices.numel(), config.audio_in_channels}, seed, 2);
  in.text = normal_tensor({layout.text_indices.numel(), config.text_dim}, seed, 3);
  in.timestep_indices = timesteps.indices;
  in.token_tags = layout.token_tags;
  in.positions = layout.positions;
  in.video_indices = layout.video_indices;
  in.audio_indices = layout.audio_indices;
  in.text_indices = layout.text_indices;
  return in;
}

}  // namespace orochi::pipeline
