// The two VAE decoders a t2va run ends with, behind small interfaces so the pipeline does not care
// where they run (the CPU reference here; GPU versions in models/*/cuda).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/weights.h"

namespace orochi::pipeline {

// Called after each temporal chunk: (chunks done, chunks in all, seconds of this chunk).
using ChunkCallback = std::function<void(int64_t done, int64_t total, double seconds)>;

// Family-neutral: latents go in as the denoiser made them (normalized); each decoder knows its VAE's
// statistics and layout.
class VideoDecoder {
 public:
  virtual ~VideoDecoder() = default;
  virtual std::string device_name() const = 0;
  // Normalized latents f32 [C, T, H, W] (host) -> video f32 [3, F, H·s, W·s] in [-1, 1] (host).
  // H3: F = 17n + 5, s = 16, the release's temporal chunking and spatial tiling.
  virtual Expected<Tensor> decode(const Tensor& latents, const ChunkCallback& on_chunk) = 0;
};

class AudioDecoder {
 public:
  virtual ~AudioDecoder() = default;
  virtual std::string device_name() const = 0;
  virtual int sample_rate() const = 0;
  // Normalized latents f32 [B, A, C] (host) -> waveform f32 [B, hop · A] in [-1, 1] (host).
  virtual Expected<Tensor> decode(const Tensor& latents) = 0;
};

// The CPU reference decoders over host weights (which must outlive them).
class CpuVideoDecoder final : public VideoDecoder {
 public:
  explicit CpuVideoDecoder(const h3vae::DecoderWeights& weights) : weights_(weights) {}
  std::string device_name() const override { return "CPU"; }
  Expected<Tensor> decode(const Tensor& latents, const ChunkCallback& on_chunk) override;

 private:
  const h3vae::DecoderWeights& weights_;
};

class CpuAudioDecoder final : public AudioDecoder {
 public:
  explicit CpuAudioDecoder(const h3_audio::AudioDecoderWeights& weights) : weights_(weights) {}
  std::string device_name() const override { return "CPU"; }
  int sample_rate() const override { return static_cast<int>(weights_.config.sampling_rate); }
  Expected<Tensor> decode(const Tensor& latents) override;

 private:
  const h3_audio::AudioDecoderWeights& weights_;
};

}  // namespace orochi::pipeline
