// A narrow H3 model with the real head width and a small packed request, for GPU tests that
// compare two ways of running the same model (layouts, weight streaming).
#pragma once

#include <cmath>

#include "models/h3/request_buffers.h"
#include "models/h3/lora.h"     // h3::linear_weights
#include "models/h3/weights.h"
#include "pipeline/packed_layout.h"
#include "pipeline/random_inputs.h"

namespace orochi::testing {

using h3::gpu::RequestSize;

// A narrow model with real head width: 8 heads of 128 (TP2 x SP2 would split them 2 x 2), an FFN
// width that does not split evenly, 3 blocks.
inline h3::H3Config narrow_config() {
  h3::H3Config c;
  c.num_attention_heads = 8;
  c.hidden_size = 512;
  c.ffn_dim = 1001;
  c.num_layers = 3;
  c.text_dim = 256;
  c.time_embed_hidden_dim = 512;
  c.time_embed_dim = 256;
  return c;
}

// The narrow model's quantized-GEMM shape: K a multiple of 16 for the fp8 / int8 GEMMs.
inline h3::H3Config quantizable_narrow_config() {
  h3::H3Config c = narrow_config();
  c.ffn_dim = 1024;
  return c;
}

// CPU random weights with every matrix scaled to N(0, 0.8 / sqrt(fan_in)), as the GPU's random init
// scales them: activations of the released model's size.
inline h3::H3Weights scaled_host_weights(const h3::H3Config& c) {
  h3::H3Weights w = h3::random_weights(c, 31);
  for (auto& [name, t] : h3::linear_weights(w)) {
    if (t->ndim() != 2) continue;
    const float scale = 4.0f / std::sqrt(static_cast<float>(t->dim(1)));
    float* p = t->data<float>();
    for (int64_t i = 0; i < t->numel(); ++i) p[i] *= scale;
  }
  return w;
}

struct Request {
  h3::H3Inputs in;
  Tensor timesteps;
  RequestSize size;
};

// 5 latent frames of 6x10 video patches, audio and 37 text rows: S is odd.
inline Request narrow_request(const h3::H3Config& c) {
  pipeline::LayoutRequest lr{.text_rows = 37, .latent_frames = 5, .latent_height = 12, .latent_width = 20,
                             .audio_latents = 21, .keyframes = {}};
  const pipeline::PackedLayout layout = *pipeline::build_packed_layout(lr);
  const pipeline::RowTimesteps ts = pipeline::assign_row_timesteps(layout, 0.3f, 0.4f);
  Request r;
  r.in = pipeline::random_h3_inputs(c, layout, ts, 5);
  r.timesteps = ts.timesteps;
  r.size = {r.in.rows(), r.in.text.dim(0), r.in.video.dim(0), r.in.audio.dim(0), r.timesteps.numel()};
  return r;
}

}  // namespace orochi::testing
