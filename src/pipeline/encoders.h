// The two VAE encoders fl2va and ref2va start with (keyframes, reference images and videos;
// soundtracks and audio clips), behind small interfaces so the pipeline does not care where they
// run: the CPU reference here, GPU versions in the engine's backend (engine/gpu_backend.h). Both
// sides run the same recipe around the network (h3vae::encode_condition's ImageNet normalization,
// posterior sample with the seed-42 CPU generator, fp16 round trip and latent normalization on the
// host; h3_audio::encode_reference_audio's posterior mean and normalization), so only the network's
// arithmetic differs between devices.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/encoder_weights.h"
#include "models/h3_video_vae/encoder_weights.h"

namespace orochi::pipeline {

class VideoEncoder {
 public:
  virtual ~VideoEncoder() = default;
  virtual std::string device_name() const = 0;
  virtual int64_t latent_channels() const = 0;
  // One condition (a keyframe, an image or a video reference): uint8 pixels [3, F, H, W] (host) ->
  // normalized latents f32 [C, T, H/16, W/16] (host), T = 1 for one frame, 5n + 2 for 17n + 5.
  virtual Expected<Tensor> encode_condition(const Tensor& pixels_u8) = 0;
};

class AudioEncoder {
 public:
  virtual ~AudioEncoder() = default;
  virtual std::string device_name() const = 0;
  virtual int64_t latent_channels() const = 0;
  // A soundtrack or clip f32 [1 or 2, N] at the model's rate (host) -> normalized rows f32 [2, A, C]
  // (host), A = ceil(N / hop); mono is repeated to stereo.
  virtual Expected<Tensor> encode_reference_audio(const Tensor& waveform) = 0;
};

// The CPU reference encoders over host weights (which must outlive them).
class CpuVideoEncoder final : public VideoEncoder {
 public:
  explicit CpuVideoEncoder(const h3vae::EncoderWeights& weights) : weights_(weights) {}
  std::string device_name() const override { return "CPU"; }
  int64_t latent_channels() const override { return weights_.config.latent_channels; }
  Expected<Tensor> encode_condition(const Tensor& pixels_u8) override;

 private:
  const h3vae::EncoderWeights& weights_;
};

class CpuAudioEncoder final : public AudioEncoder {
 public:
  explicit CpuAudioEncoder(const h3_audio::AudioEncoderWeights& weights) : weights_(weights) {}
  std::string device_name() const override { return "CPU"; }
  int64_t latent_channels() const override { return weights_.config.latent_channels; }
  Expected<Tensor> encode_reference_audio(const Tensor& waveform) override;

 private:
  const h3_audio::AudioEncoderWeights& weights_;
};

}  // namespace orochi::pipeline
