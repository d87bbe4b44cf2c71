#include "apps/gpu_t2va.h"

#ifdef OROCHI_WITH_CUDA
#include <cuda_runtime_api.h>

#include <chrono>
#include <functional>

#include "models/h3/cuda/gpu_denoiser.h"
#include "models/h3_audio_vae/cuda/gpu_audio_decoder.h"
#include "models/h3_video_vae/cuda/gpu_decoder.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "pipeline/denoise_loop.h"
#endif

namespace orochi::apps {

#ifdef OROCHI_WITH_CUDA
namespace {

class GpuVideo final : public pipeline::VideoDecoder {
 public:
  GpuVideo(std::unique_ptr<h3vae::gpu::GpuVideoDecoder> d, std::string name) : d_(std::move(d)), name_(std::move(name)) {}
  const h3vae::VideoVaeConfig& config() const override { return d_->config(); }
  std::string device_name() const override { return name_; }
  Expected<Tensor> decode(const Tensor& latents, const pipeline::ChunkCallback& on_chunk) override {
    using Clock = std::chrono::steady_clock;
    auto last = Clock::now();
    // The GPU decoder follows the reference's fp16 autocast, whose chunk and tile blends run in fp16.
    h3vae::DecodeOptions options;
    options.blend_precision = h3vae::BlendPrecision::kF16;
    return d_->decode(latents, options, [&](int64_t done, int64_t total) {
      const auto now = Clock::now();
      if (on_chunk) on_chunk(done, total, std::chrono::duration<double>(now - last).count());
      last = now;
    });
  }
  h3vae::gpu::GpuVideoDecoder& decoder() { return *d_; }

 private:
  std::unique_ptr<h3vae::gpu::GpuVideoDecoder> d_;
  std::string name_;
};

class GpuAudio final : public pipeline::AudioDecoder {
 public:
  GpuAudio(std::unique_ptr<h3_audio::gpu::GpuAudioDecoder> d, std::string name) : d_(std::move(d)), name_(std::move(name)) {}
  const h3_audio::AudioVaeConfig& config() const override { return d_->config(); }
  std::string device_name() const override { return name_; }
  Expected<Tensor> decode(const Tensor& latents) override { return d_->decode(latents); }
  h3_audio::gpu::GpuAudioDecoder& decoder() { return *d_; }

 private:
  std::unique_ptr<h3_audio::gpu::GpuAudioDecoder> d_;
  std::string name_;
};

h3::gpu::RequestSize request_size(const pipeline::T2vaPlan& plan) {
  return {plan.layout.rows, plan.layout.text_indices.numel(), plan.layout.video_indices.numel(),
          plan.layout.audio_indices.numel(), plan.table_timesteps};
}

using AudioFactory = std::function<Expected<std::unique_ptr<pipeline::AudioDecoder>>(const std::string& name)>;

// The audio decoder on `device`, its weights from `fill`.
template <typename Fill>
AudioFactory gpu_audio(const h3_audio::AudioVaeConfig& config, int device, int64_t latents, Fill fill) {
  return [=](const std::string& name) -> Expected<std::unique_ptr<pipeline::AudioDecoder>> {
    // Stereo: the two channels are the mono decoder's batch of two.
    OROCHI_ASSIGN_OR_RETURN(auto decoder, h3_audio::gpu::GpuAudioDecoder::create(config, device, latents, 2));
    OROCHI_RETURN_IF_ERROR(fill(*decoder));
    return std::unique_ptr<pipeline::AudioDecoder>(std::make_unique<GpuAudio>(std::move(decoder), name));
  };
}

// Creates the denoiser and the video decoder on `device`; `fill_*` give each its weights.
template <typename FillDenoiser, typename FillVideo>
Expected<GpuT2va> make(const h3::H3Config& transformer, const h3vae::VideoVaeConfig& video, int device,
                       const pipeline::T2vaPlan& plan, FillDenoiser fill_denoiser, FillVideo fill_video,
                       const AudioFactory& make_audio) {
  GpuT2va g;
  g.device = device;
  OROCHI_ASSIGN_OR_RETURN(auto denoiser, h3::gpu::GpuDenoiser::create(transformer, device, request_size(plan)));
  OROCHI_RETURN_IF_ERROR(fill_denoiser(*denoiser));
  g.device_name = denoiser->device_name();
  const h3vae::DecodeOptions options;
  OROCHI_ASSIGN_OR_RETURN(const int64_t tile_tokens, h3vae::gpu::max_tile_tokens(video, options, plan.geometry.latent_height,
                                                                                  plan.geometry.latent_width));
  OROCHI_ASSIGN_OR_RETURN(auto video_decoder, h3vae::gpu::GpuVideoDecoder::create(video, device, tile_tokens));
  OROCHI_RETURN_IF_ERROR(fill_video(*video_decoder));
  OROCHI_ASSIGN_OR_RETURN(g.audio, make_audio(g.device_name));
  g.denoiser = std::move(denoiser);
  g.video = std::make_unique<GpuVideo>(std::move(video_decoder), g.device_name);
  return g;
}

}  // namespace

Expected<GpuT2va> gpu_t2va_from_host(const pipeline::T2vaModels& m, int device, const pipeline::T2vaPlan& plan) {
  return make(
      m.transformer.config, m.video_vae.config, device, plan,
      [&](h3::gpu::GpuDenoiser& d) { return d.upload_weights(m.transformer); },
      [&](h3vae::gpu::GpuVideoDecoder& d) { return d.upload(m.video_vae); },
      gpu_audio(m.audio_vae.config, device, plan.geometry.audio_latents,
                [&m](auto& d) { return d.upload(m.audio_vae); }));
}

Expected<GpuT2va> gpu_t2va_random(const h3::H3Config& transformer, int device, const pipeline::T2vaPlan& plan,
                                  uint64_t seed) {
  h3_audio::AudioVaeConfig audio;  // the release's decoder
  audio.latents_mean.assign(static_cast<size_t>(audio.latent_channels), 0.0f);
  audio.latents_std.assign(static_cast<size_t>(audio.latent_channels), 1.0f);
  return make(
      transformer, h3vae::VideoVaeConfig{}, device, plan,
      [&](h3::gpu::GpuDenoiser& d) { return d.init_random_weights(seed); },
      [&](h3vae::gpu::GpuVideoDecoder& d) { return d.init_random(seed + 1); },
      gpu_audio(audio, device, plan.geometry.audio_latents, [seed](auto& d) { return d.init_random(seed + 2); }));
}

Expected<Tensor> gpu_encode_prompt(const std::string& dir, const Tensor& token_ids, int64_t layer, int device) {
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextWeights host, qwen3vl::load_text_weights(dir, layer));
  OROCHI_ASSIGN_OR_RETURN(auto encoder,
                          qwen3vl::gpu::GpuTextEncoder::create(host.config, layer, device, token_ids.numel()));
  OROCHI_RETURN_IF_ERROR(encoder->upload(host));
  return encoder->encode_text(token_ids);  // the encoder and its memory go when this returns
}

nlohmann::json gpu_memory_report(int device) {
  size_t free = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess)
    return nlohmann::json{{"device", device}, {"error", "cudaMemGetInfo failed"}};
  return nlohmann::json{{"device", device}, {"used_bytes", total - free}, {"total_bytes", total}};
}

#else

namespace {
Status no_cuda() {
  return unsupported("this build has no CUDA backend; build on a machine with the CUDA toolkit (scripts/build.sh "
                     "enables it when nvcc is found), or run on the CPU with --device cpu");
}
}  // namespace

Expected<GpuT2va> gpu_t2va_from_host(const pipeline::T2vaModels&, int, const pipeline::T2vaPlan&) { return no_cuda(); }
Expected<GpuT2va> gpu_t2va_random(const h3::H3Config&, int, const pipeline::T2vaPlan&, uint64_t) { return no_cuda(); }
Expected<Tensor> gpu_encode_prompt(const std::string&, const Tensor&, int64_t, int) { return no_cuda(); }
nlohmann::json gpu_memory_report(int device) { return nlohmann::json{{"device", device}, {"error", "no CUDA"}}; }

#endif

}  // namespace orochi::apps
