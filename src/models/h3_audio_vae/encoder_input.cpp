#include "models/h3_audio_vae/encoder_input.h"

#include <cstring>
#include <string>

namespace orochi::h3_audio {

Status check_mono_batch(const Tensor& waveform, const char* what) {
  if (!waveform.defined() || waveform.ndim() != 2 || !dtype_is_float(waveform.dtype()))
    return shape_mismatch(std::string(what) +
                          ": the waveform must be float [items, samples] (one mono item per "
                          "row; stereo is two items), got " +
                          (waveform.defined() ? waveform.describe() : "nothing"));
  if (waveform.dim(0) < 1 || waveform.dim(1) < 1)
    return invalid_argument(std::string(what) + ": the waveform " + waveform.describe() +
                            " holds no samples; pass at least one sample per item");
  return Status::ok();
}

int64_t latents_for_samples(const AudioVaeConfig& config, int64_t samples) {
  const int64_t hop = config.encoder_hop_length();
  return (samples + hop - 1) / hop;
}

Tensor pad_to_hop(const AudioVaeConfig& config, const Tensor& waveform) {
  const Tensor x = waveform.to(DType::kF32);  // contiguous
  const int64_t B = x.dim(0), N = x.dim(1);
  const int64_t padded = latents_for_samples(config, N) * config.encoder_hop_length();
  Tensor out = Tensor::empty({B, 1, padded}, DType::kF32);  // zero-filled
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(out.data<float>() + b * padded, x.data<float>() + b * N, static_cast<size_t>(N) * sizeof(float));
  return out;
}

Expected<Tensor> reference_stereo(const Tensor& waveform) {
  if (!waveform.defined() || waveform.ndim() != 2 || !dtype_is_float(waveform.dtype()))
    return shape_mismatch("reference audio must be a float waveform [channels, samples], got " +
                          (waveform.defined() ? waveform.describe() : std::string("nothing")));
  const int64_t channels = waveform.dim(0), N = waveform.dim(1);
  if (channels < 1 || channels > 2)
    return invalid_argument("reference audio has " + std::to_string(channels) +
                            " channels; MiniMax-H3 takes mono or stereo soundtracks (as the reference pipeline, "
                            "which refuses others): downmix it to 2 channels first");
  if (N < 1) return invalid_argument("reference audio is empty (0 samples); pass a clip of at least one sample");
  const Tensor x = waveform.to(DType::kF32);
  if (channels == 2) return x;
  Tensor out = Tensor::empty({2, N}, DType::kF32);
  for (int64_t c = 0; c < 2; ++c)
    std::memcpy(out.data<float>() + c * N, x.data<float>(), static_cast<size_t>(N) * sizeof(float));
  return out;
}

Expected<Tensor> normalize(const AudioVaeConfig& config, const Tensor& latents) {
  if (config.latents_mean.empty() || config.latents_std.empty())
    return invalid_argument(
        "the audio VAE config.json has no latents_mean / latents_std, so latents cannot be "
        "normalized; use the audio_vae/config.json of the release");
  if (!latents.defined() || latents.ndim() != 3 || latents.dim(2) != config.latent_channels ||
      !dtype_is_float(latents.dtype()))
    return shape_mismatch("normalize: audio latents must be float [items, A, " +
                          std::to_string(config.latent_channels) + "], got " +
                          (latents.defined() ? latents.describe() : std::string("nothing")));
  Tensor out = latents.to(DType::kF32);  // a contiguous copy
  const int64_t C = config.latent_channels;
  float* p = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const float centered = p[i] - config.latents_mean[i % C];  // two roundings, as (z - mean) / std
    p[i] = centered / config.latents_std[i % C];
  }
  return out;
}

}  // namespace orochi::h3_audio
