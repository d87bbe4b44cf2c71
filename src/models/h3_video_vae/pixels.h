// The pipeline's steps around vae.decode (modular_pipelines/minimax_h3/decoders.py): latents come
// out of the denoiser normalized per channel, and the VAE's frames are ImageNet-normalized RGB.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/config.h"

namespace orochi::h3vae {

// latents · latents_std + latents_mean per channel: [C, T, H, W] -> same.
Expected<Tensor> denormalize_latents(const VideoVaeConfig& config, const Tensor& normalized);

// clamp(x · imagenet_std + imagenet_mean, 0, 1) per channel: [3, F, H, W] -> pixels in [0, 1].
Expected<Tensor> to_pixels(const Tensor& video);
// The same pixels frame-major, [F, 3, H, W] (what the video writers take), in one parallel pass:
// a 124-frame 1344x768 video is 1.5 GB of f32, and separate passes each cost seconds.
Expected<Tensor> to_pixel_frames(const Tensor& video);

}  // namespace orochi::h3vae
