// The reference-encode phase on a GPU, as the plan's encode phase counts it (planner/encode_memory.h):
// a GpuVideoEncoder on each GPU of the run (TF32 convolutions, as the reference's fp32 encode runs
// them on a GPU by default; the fused channels-last path with each clip's tiles cut on the device),
// its activation arena refit to each input's own tile shape; a video's 17-frame clips shared among
// the GPUs, each clip whole on one (h3vae::encode_moments_split: bit-identical to one GPU), pictures
// on the first; and one GpuAudioEncoder (f32) for the longest sound. Around the networks everything
// is the CPU's recipe (the seed-42 posterior, fp16, normalization), so the GPU and CPU encodes differ
// only by the convolutions' arithmetic.
#include "engine/cuda/gpu_encoders.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dist/cuda/gpu_parallel_context.h"
#include "models/h3_audio_vae/cuda/gpu_audio_encoder.h"
#include "models/h3_video_vae/cuda/gpu_encoder.h"
#include "models/h3_video_vae/encoder_posterior.h"
#include "planner/encode_memory.h"

namespace orochi::engine::cuda_backend {
namespace {

std::string gpu_name(int device) { return "cuda:" + std::to_string(device); }

class GpuVideo final : public pipeline::VideoEncoder {
 public:
  // encoders[g] on workers' GPU g, each with the same weights.
  GpuVideo(std::vector<std::unique_ptr<h3vae::gpu::GpuVideoEncoder>> encoders,
           std::shared_ptr<dist::ParallelContext> workers)
      : encoders_(std::move(encoders)), workers_(std::move(workers)) {}
  std::string device_name() const override {
    const int first = encoders_.front()->device();
    return encoders_.size() == 1 ? gpu_name(first)
                                 : gpu_name(first) + ".." + std::to_string(first + static_cast<int>(encoders_.size()) - 1);
  }
  int64_t latent_channels() const override { return encoders_.front()->config().latent_channels; }
  Expected<Tensor> encode_condition(const Tensor& pixels_u8) override {
    if (!pixels_u8.defined() || pixels_u8.ndim() != 4)
      return invalid_argument("the video encoder takes uint8 pixels [3, F, H, W], got " +
                              (pixels_u8.defined() ? pixels_u8.describe() : std::string("nothing")));
    const h3vae::VideoVaeConfig& config = encoders_.front()->config();
    // Each input on an activation arena of its own tile shape (the plan's peak is the largest's).
    OROCHI_ASSIGN_OR_RETURN(const h3vae::EncoderTileShape tile,
                            h3vae::max_tile_shape(config, h3vae::EncodeOptions{}, pixels_u8.dim(1), pixels_u8.dim(2),
                                                  pixels_u8.dim(3)));
    const bool split = encoders_.size() > 1 && pixels_u8.dim(1) > 1;  // a video's clips over the GPUs
    for (size_t g = 0; g < (split ? encoders_.size() : 1); ++g) OROCHI_RETURN_IF_ERROR(encoders_[g]->fit(tile));
    if (!split) return encoders_.front()->encode_condition(pixels_u8);
    OROCHI_ASSIGN_OR_RETURN(Tensor pixels, h3vae::normalize_pixels(pixels_u8));
    std::vector<h3vae::ClipEncoder> ranks;
    for (const auto& e : encoders_)
      ranks.push_back([enc = e.get()](const Tensor& clip) { return enc->encode_clip(clip); });
    OROCHI_ASSIGN_OR_RETURN(const Tensor moments, h3vae::encode_moments_split(config, *workers_, ranks, pixels));
    pixels = Tensor();
    return h3vae::condition_from_moments(config, moments);
  }

 private:
  std::vector<std::unique_ptr<h3vae::gpu::GpuVideoEncoder>> encoders_;
  std::shared_ptr<dist::ParallelContext> workers_;  // one worker per GPU (no groups: clips come back to the host)
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
  // One encoder per GPU that shares the clips, made and filled at the same time; random weights are
  // drawn from the same seed on each, so every GPU holds the same encoder.
  std::vector<int> devices;
  for (int g = 0; g < std::max(placement.gpus, 1); ++g) devices.push_back(placement.device + g);
  OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<dist::ParallelContext> workers, dist::make_gpu_context(devices));
  std::vector<std::unique_ptr<h3vae::gpu::GpuVideoEncoder>> encoders(devices.size());
  OROCHI_RETURN_IF_ERROR(workers
                             ->run([&](int g) -> Status {
                               OROCHI_ASSIGN_OR_RETURN(encoders[g], h3vae::gpu::GpuVideoEncoder::create(
                                                                        c, devices[g], placement.first_tile, options));
                               return host ? encoders[g]->upload(*host) : encoders[g]->init_random(seed);
                             })
                             .with_context("video VAE encoder"));
  return std::unique_ptr<pipeline::VideoEncoder>(std::make_unique<GpuVideo>(std::move(encoders), std::move(workers)));
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
