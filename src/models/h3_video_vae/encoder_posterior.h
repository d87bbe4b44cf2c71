// The pipeline's steps around vae.encode (diffusers modular_pipelines/minimax_h3/encoders.py
// `encode_vae_condition`, REF2VA.md §1.3): uint8 pixels are ImageNet-normalized, the posterior is
// *sampled* with a fresh CPU generator seeded 42 (torch's mt19937 + normal fill, reproduced in
// core/torch_cpu_normal.h), the sample is rounded through fp16, then normalized per channel with
// latents_mean / latents_std.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "core/torch_cpu_normal.h"
#include "models/h3_video_vae/encoder.h"

namespace orochi::h3vae {

// The reference's posterior seed (components.keyframe_encode_seed).
inline constexpr uint64_t kPosteriorSeed = 42;

// uint8 pixels [3, F, H, W] -> (u8 / 255 − mean_c) / std_c in fp32, op by op as the reference
// (ImageNet mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225)).
Expected<Tensor> normalize_pixels(const Tensor& pixels_u8);

// DiagonalGaussianDistribution(moments).sample with the given noise: mean, logvar = the halves of
// moments [2C, T, h, w] along channels; logvar clamped to [−30, 20]; z = mean + exp(0.5·logvar)·ε.
// noise [C, T, h, w] (the draw [1, C, T, h, w] without its batch dim).
Tensor sample_posterior(const Tensor& moments, const Tensor& noise);

// torch.randn([1, C, T, h, w], generator=torch.Generator().manual_seed(seed)) without the batch dim,
// as torch draws it with `kernel` (AVX2 by default; see core/torch_cpu_normal.h and REF2VA.md U6).
Tensor posterior_noise(int64_t channels, int64_t frames, int64_t height, int64_t width,
                       uint64_t seed = kPosteriorSeed, TorchCpuKernel kernel = TorchCpuKernel::kAvx2);

// z.to(float16).float(), then (z − latents_mean_c) / latents_std_c: [C, T, h, w] -> same.
Expected<Tensor> fp16_round_and_normalize(const VideoVaeConfig& config, const Tensor& z);

// The recipe after the encoder: moments [2C, T, h, w] sampled with posterior_noise(seed), rounded
// through fp16 and normalized (what encode_condition does once the moments are there).
Expected<Tensor> condition_from_moments(const VideoVaeConfig& config, const Tensor& moments,
                                        uint64_t seed = kPosteriorSeed);

// The whole recipe for one condition (a keyframe, an image or a video reference): uint8 pixels
// [3, F, H, W] -> normalized latents [latent, T, H/r, W/r] (T = 1 for one frame, 5n+2 for 17n+5).
Expected<Tensor> encode_condition(const EncoderWeights& weights, const Tensor& pixels_u8,
                                  const EncodeOptions& options = {}, uint64_t seed = kPosteriorSeed);

}  // namespace orochi::h3vae
