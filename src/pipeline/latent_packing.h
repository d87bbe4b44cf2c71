// Between latent tensors and the rows of the packed sequence, as diffusers' MiniMax-H3 pipeline
// converts them (before_denoise.patchify_video_latents and the unpack step of decoders.py):
// video rows are frame-major, then row-major over (h, w) patches, each row holding its patch as
// (channel, pt, ph, pw); audio rows are channel-major stereo [2·A, C].
#pragma once

#include <array>
#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline {

using PatchSize = std::array<int64_t, 3>;  // (t, h, w)

// latents f32 [C, T, H, W] -> rows [T/pt · H/ph · W/pw, C·pt·ph·pw].
// shape_mismatch when T, H or W is not divisible by the patch.
Expected<Tensor> patchify_video_latents(const Tensor& latents, const PatchSize& patch);

// The inverse: rows [T/pt · H/ph · W/pw, C·pt·ph·pw] -> latents [C, T, H, W].
Expected<Tensor> unpatchify_video_rows(const Tensor& rows, int64_t channels, int64_t frames, int64_t height,
                                       int64_t width, const PatchSize& patch);

// Channel-major audio rows [channels · A, C] -> [channels, A, C] (the audio VAE's batch of mono
// items; a view of the same bytes when `rows` is contiguous).
Expected<Tensor> audio_rows_to_batch(const Tensor& rows, int64_t channels);

}  // namespace orochi::pipeline
