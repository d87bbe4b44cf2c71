// The video VAE's ViT decoder over one latent tile: post_quant_conv, proj_in, register + zero
// tokens, the transformer blocks, LayerNorm, proj_out and unpatchify. A tile is decoded on its own:
// its RoPE positions are normalized to the tile, not to the canvas.
#pragma once

#include <functional>
#include <string>

#include "backends/cpu/ops.h"
#include "core/tensor.h"
#include "models/h3_video_vae/weights.h"

namespace orochi::h3vae {

// Sees named intermediates for debugging and golden tests. decode_tile names: "post_quant_conv"
// [C, T, h, w], "proj_in" [N, D], "tokens" [N+R+1, D], "rope.cos" / "rope.sin" [N+R+1, rope_dim],
// "block.<i>" [N+R+1, D], "norm_out" [N+R+1, D], "tile" [out_ch, T·pt, h·p, w·p]. Callers that
// decode many tiles prefix these (see tiling.h and temporal.h).
using DecodeObserver = std::function<void(const std::string& name, const Tensor& value)>;

// Rotary table of a T x h x w token grid followed by `extra` tokens at position (0, 0, 0). Each axis
// of size n is normalized as p = 2(k + 0.5)/n − 1; angles 2π·p·inv_freq with inv_freq[j] =
// theta^(−6j/rope_dim), laid out [t | h | w] and duplicated (rotate-half over rope_dim channels).
cpu::RopeTable tile_rope_table(const VideoVaeConfig& config, int64_t frames, int64_t height, int64_t width,
                               int64_t extra);

// z [C, T, h, w] f32 (denormalized latents, any strides) -> pixels [out_ch, T·pt, h·p, w·p] in the
// VAE's ImageNet-normalized space.
Tensor decode_tile(const DecoderWeights& weights, const Tensor& z, const DecodeObserver& observer = nullptr);

}  // namespace orochi::h3vae
