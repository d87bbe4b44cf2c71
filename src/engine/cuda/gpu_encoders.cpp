// The reference-encode phase on a GPU, as the plan's encode phase counts it (planner/encode_memory.h):
// one GpuVideoEncoder (TF32 convolutions, as the reference's fp32 encode runs them on a GPU by
// default; the fused channels-last path with each clip's tiles cut on the device) whose activation
// arena is refit to each input's own tile shape, and one GpuAudioEncoder (f32) for the longest sound.
// Around the networks everything is the CPU's recipe (the seed-42 posterior, fp16, normalization),
// so the GPU and CPU encodes differ only by the convolutions' arithmetic.
#include "engine/cuda/gpu_encoders.h"

#include <string>
#include <utility>

#include "models/h3_audio_vae/cuda/gpu_audio_encoder.h"
#include "models/h3_video_vae/cuda/gpu_encoder.h"
#include "planner/encode_memory.h"

namespace orochi::engine::cuda_backend {
namespace {

std::string gpu_name(int device) { return "cuda:" + std::to_string(device); }

class GpuVideo final : public pipeline::VideoEncoder {
 public:
  explicit GpuVideo(std::unique_ptr<h3vae::gpu::GpuVideoEncoder> encoder) : encoder_(std::move(encoder)) {}
  std::string device_name() const override { return gpu_name(encoder_->device()); }
  int64_t latent_channels() const override { return encoder_->config().latent_channels; }
  Expected<Tensor> encode_condition(const Tensor& pixels_u8) override {
    if (!pixels_u8.defined() || pixels_u8.ndim() != 4)
      return invalid_argument("the video encoder takes uint8 pixels [3, F, H, W], got " +
                              (pixels_u8.defined() ? pixels_u8.describe() : std::string("nothing")));
    // Each input on an activation arena of its own tile shape (the plan's peak is the largest's).
    OROCHI_ASSIGN_OR_RETURN(const h3vae::EncoderTileShape tile,
                            h3vae::max_tile_shape(encoder_->config(), h3vae::EncodeOptions{}, pixels_u8.dim(1),
                                                  pixels_u8.dim(2), pixels_u8.dim(3)));
    OROCHI_RETURN_IF_ERROR(encoder_->fit(tile));
    return encoder_->encode_condition(pixels_u8);
  }

 private:
  std::unique_ptr<h3vae::gpu::GpuVideoEncoder> encoder_;
};

class GpuAudio final : public pipeline::AudioEncoder {
 public:
  // `encoder` null: the request has no sound (a ref2va of pictures and silent videos).
  GpuAudio(h3_audio::AudioVaeConfig config, int device, std::unique_ptr<h3_audio::gpu::GpuAudioEncoder> encoder)
      : config_(std::move(config)), device_(device), encoder_(std::move(encoder)) {}
  std::string device_name() const override { return gpu_name(device_); }
  int64_t latent_channels() const override { return config_.latent_channels; }
  Expected<Tensor> encode_reference_audio(const Tensor& waveform) override {
    if (!encoder_)
      return Status(ErrorCode::kInternal, "the audio encoder was made for a request without sound (audio_samples 0)");
    return encoder_->encode_reference_audio(waveform);
  }

 private:
  h3_audio::AudioVaeConfig config_;
  int device_ = 0;
  std::unique_ptr<h3_audio::gpu::GpuAudioEncoder> encoder_;
};

}  // namespace

Expected<std::unique_ptr<pipeline::VideoEncoder>> cuda_video_encoder(const h3vae::VideoVaeConfig& config,
                                                                     const h3vae::EncoderWeights* host,
                                                                     const EncoderPlacement& placement, uint64_t seed) {
  h3vae::gpu::GpuEncoderOptions options;  // TF32, fused channels last: the measured fastest
  options.device_tiles = planner::kEncoderDeviceTiles;
  const h3vae::VideoVaeConfig& c = host ? host->config : config;
  OROCHI_ASSIGN_OR_RETURN(auto encoder, h3vae::gpu::GpuVideoEncoder::create(c, placement.device, placement.first_tile,
                                                                           options));
  OROCHI_RETURN_IF_ERROR((host ? encoder->upload(*host) : encoder->init_random(seed)).with_context("video VAE encoder"));
  return std::unique_ptr<pipeline::VideoEncoder>(std::make_unique<GpuVideo>(std::move(encoder)));
}

Expected<std::unique_ptr<pipeline::AudioEncoder>> cuda_audio_encoder(const h3_audio::AudioVaeConfig& config,
                                                                     const h3_audio::AudioEncoderWeights* host,
                                                                     const EncoderPlacement& placement, uint64_t seed) {
  h3_audio::AudioVaeConfig c = host ? host->config : config;
  if (!host && c.latents_mean.empty()) {  // random weights: no statistics to undo, as the random decoder's
    c.latents_mean.assign(static_cast<size_t>(c.latent_channels), 0.0f);
    c.latents_std.assign(static_cast<size_t>(c.latent_channels), 1.0f);
  }
  std::unique_ptr<h3_audio::gpu::GpuAudioEncoder> encoder;
  if (placement.audio_samples > 0) {
    // Stereo: the two channels are the mono encoder's batch of two (the plan's 2 x samples).
    OROCHI_ASSIGN_OR_RETURN(encoder, h3_audio::gpu::GpuAudioEncoder::create(c, placement.device,
                                                                           placement.audio_samples, 2));
    OROCHI_RETURN_IF_ERROR((host ? encoder->upload(*host) : encoder->init_random(seed)).with_context("audio VAE encoder"));
  }
  return std::unique_ptr<pipeline::AudioEncoder>(std::make_unique<GpuAudio>(c, placement.device, std::move(encoder)));
}

}  // namespace orochi::engine::cuda_backend
