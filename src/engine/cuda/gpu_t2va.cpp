// The CUDA backend's t2va models: the H3 denoiser (on one GPU or several), the video VAE (its
// temporal chunks shared by the run's GPUs) and the audio VAE on the first GPU, behind the
// pipeline's interfaces, with memory sized from the request's plan.
#include "engine/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "dist/cuda/gpu_parallel_context.h"
#include "engine/gpu_capability.h"
#include "models/h3/cuda/gpu_denoiser.h"
#include "models/h3_audio_vae/cuda/gpu_audio_decoder.h"
#include "models/h3_audio_vae/decoder.h"
#include "models/h3_video_vae/cuda/gpu_decoder.h"
#include "models/h3_video_vae/pixels.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"

namespace orochi::engine::cuda_backend {
namespace {

// The decoders are created when the decode phase starts (after the denoiser gave its memory back)
// and freed when their decode is done, as the plan's phases assume; each is sized for the latents
// it gets, so one engine decodes requests of any size.

// The whole decode runs on the device: on one GPU, or with the other GPUs of the run as helpers
// that decode runs of the temporal chunks at the same time (GpuVideoDecoder::decode), bit-identical
// to one GPU: the tiles are deterministic and the GEMMs untuned, so every GPU computes the same bits.
class GpuVideo final : public pipeline::VideoDecoder {
 public:
  // A decoder on `device` for latent canvases up to (height, width).
  using MakeOn = std::function<Expected<std::unique_ptr<h3vae::gpu::GpuVideoDecoder>>(int device, int64_t latent_height,
                                                                                       int64_t latent_width)>;
  // `workers`: one per GPU that shares the decode (the first decodes and assembles).
  GpuVideo(h3vae::VideoVaeConfig config, MakeOn make, std::shared_ptr<dist::ParallelContext> workers, std::string name)
      : config_(std::move(config)), make_(std::move(make)), workers_(std::move(workers)), name_(std::move(name)) {}
  std::string device_name() const override { return name_; }
  Expected<Tensor> decode(const Tensor& normalized, const pipeline::ChunkCallback& on_chunk) override {
    using Clock = std::chrono::steady_clock;
    OROCHI_ASSIGN_OR_RETURN(const Tensor latents, h3vae::denormalize_latents(config_, normalized));
    // Every GPU's decoder is made (weights uploaded or generated) at the same time.
    std::vector<std::unique_ptr<h3vae::gpu::GpuVideoDecoder>> made(static_cast<size_t>(workers_->workers()));
    OROCHI_RETURN_IF_ERROR(workers_
                               ->run([&](int g) -> Status {
                                 // [C, T, H, W]
                                 OROCHI_ASSIGN_OR_RETURN(made[g], make_(workers_->device(g), latents.dim(2), latents.dim(3)));
                                 return Status::ok();
                               })
                               .with_context("video decoder"));
    std::vector<h3vae::gpu::GpuVideoDecoder*> helpers;
    for (size_t g = 1; g < made.size(); ++g) helpers.push_back(made[g].get());
    auto last = Clock::now();
    // The GPU decoder follows the reference's fp16 autocast, whose chunk and tile blends run in fp16.
    h3vae::DecodeOptions options;
    options.blend_precision = h3vae::BlendPrecision::kF16;
    return made[0]->decode(latents, options, [&](int64_t done, int64_t total) {
      const auto now = Clock::now();
      if (on_chunk) on_chunk(done, total, std::chrono::duration<double>(now - last).count());
      last = now;
    }, helpers, workers_.get());
  }

 private:
  h3vae::VideoVaeConfig config_;
  MakeOn make_;
  std::shared_ptr<dist::ParallelContext> workers_;
  std::string name_;
};

class GpuAudio final : public pipeline::AudioDecoder {
 public:
  // A decoder for `audio_latents` latents per channel.
  using Make = std::function<Expected<std::unique_ptr<h3_audio::gpu::GpuAudioDecoder>>(int64_t audio_latents)>;
  GpuAudio(h3_audio::AudioVaeConfig config, Make make, std::string name)
      : config_(std::move(config)), make_(std::move(make)), name_(std::move(name)) {}
  std::string device_name() const override { return name_; }
  int sample_rate() const override { return static_cast<int>(config_.sampling_rate); }
  Expected<Tensor> decode(const Tensor& normalized) override {
    OROCHI_ASSIGN_OR_RETURN(const Tensor latents, h3_audio::denormalize(config_, normalized));
    OROCHI_ASSIGN_OR_RETURN(auto decoder, make_(latents.dim(1)));  // [B, A, C]
    return decoder->decode(latents);
  }

 private:
  h3_audio::AudioVaeConfig config_;
  Make make_;
  std::string name_;
};

// The denoiser now; the decoders as factories that `fill_video` / `fill_audio` give weights.
template <typename FillDenoiser, typename FillVideo, typename FillAudio>
Expected<GpuT2va> make(const h3::H3Config& transformer, const h3vae::VideoVaeConfig& video,
                       const h3_audio::AudioVaeConfig& audio, const GpuPlacement& placement,
                       const pipeline::T2vaPlan& plan, FillDenoiser fill_denoiser, FillVideo fill_video,
                       FillAudio fill_audio) {
  GpuT2va g;
  const int device = placement.device;
  std::vector<int> devices;
  for (int i = 0; i < placement.tp * placement.sp; ++i) devices.push_back(device + i);
  // The kernels these GPUs run (the generic path off compute capability 9.0), before any upload.
  OROCHI_ASSIGN_OR_RETURN(const RunSwitches switches, gpu_switches(placement.switches, placement.precision, device,
                                                                   placement.tp * placement.sp));
  // The denoiser's parallel context: its tp x sp groups and workers, freed with the denoiser.
  dist::GpuParallelOptions parallel;
  parallel.tp = placement.tp;
  parallel.sp = placement.sp;
  parallel.comm_deadline = std::chrono::seconds(placement.comm_timeout_s);
  parallel.pace = switches.sp.pace;
  OROCHI_ASSIGN_OR_RETURN(auto context, dist::make_gpu_context(devices, parallel));
  const h3::gpu::WeightStreaming streaming{placement.streamed, placement.slots, h3::gpu::WeightTier::kHost, -1};
  const h3::gpu::RunnerOptions runner_options{switches.kernels, switches.sp, placement.precision};
  OROCHI_ASSIGN_OR_RETURN(auto denoiser, h3::gpu::GpuDenoiser::create(transformer, std::move(context),
                                                                      pipeline::request_size(plan), streaming,
                                                                      runner_options));
  OROCHI_RETURN_IF_ERROR(fill_denoiser(*denoiser));
  g.device_name = denoiser->device_name();
  g.denoiser = std::move(denoiser);
  std::vector<int> decode_devices;
  for (int i = 0; i < std::max(placement.decode_gpus, 1); ++i) decode_devices.push_back(device + i);
  // The decode's workers (no groups: the helpers' clips come over by peer copies).
  OROCHI_ASSIGN_OR_RETURN(auto decode_workers, dist::make_gpu_context(decode_devices));
  g.video = std::make_unique<GpuVideo>(
      video,
      [=](int on, int64_t latent_height, int64_t latent_width) -> Expected<std::unique_ptr<h3vae::gpu::GpuVideoDecoder>> {
        OROCHI_ASSIGN_OR_RETURN(const int64_t tile_tokens,
                                h3vae::gpu::max_tile_tokens(video, h3vae::DecodeOptions{}, latent_height, latent_width));
        OROCHI_ASSIGN_OR_RETURN(auto d, h3vae::gpu::GpuVideoDecoder::create(video, on, tile_tokens));
        OROCHI_RETURN_IF_ERROR(fill_video(*d));
        return d;
      },
      std::move(decode_workers), g.device_name);
  g.audio = std::make_unique<GpuAudio>(
      audio,
      [=](int64_t audio_latents) -> Expected<std::unique_ptr<h3_audio::gpu::GpuAudioDecoder>> {
        // Stereo: the two channels are the mono decoder's batch of two.
        OROCHI_ASSIGN_OR_RETURN(auto d, h3_audio::gpu::GpuAudioDecoder::create(audio, device, audio_latents, 2));
        OROCHI_RETURN_IF_ERROR(fill_audio(*d));
        return d;
      },
      g.device_name);
  return g;
}

}  // namespace

Expected<GpuT2va> cuda_t2va_from_host(const pipeline::T2vaModels& m, const GpuPlacement& placement,
                                     const pipeline::T2vaPlan& plan) {
  const pipeline::T2vaModels* models = &m;  // outlives the run
  return make(
      m.transformer.config, m.video_vae.config, m.audio_vae.config, placement, plan,
      [models](h3::gpu::GpuDenoiser& d) { return d.upload_weights(models->transformer); },
      [models](h3vae::gpu::GpuVideoDecoder& d) { return d.upload(models->video_vae); },
      [models](h3_audio::gpu::GpuAudioDecoder& d) { return d.upload(models->audio_vae); });
}

Expected<GpuT2va> cuda_t2va_random(const h3::H3Config& transformer, const GpuPlacement& placement,
                                  const pipeline::T2vaPlan& plan, uint64_t seed) {
  h3_audio::AudioVaeConfig audio;  // the release's decoder
  audio.latents_mean.assign(static_cast<size_t>(audio.latent_channels), 0.0f);
  audio.latents_std.assign(static_cast<size_t>(audio.latent_channels), 1.0f);
  return make(
      transformer, h3vae::VideoVaeConfig{}, audio, placement, plan,
      [seed](h3::gpu::GpuDenoiser& d) { return d.init_random_weights(seed); },
      [seed](h3vae::gpu::GpuVideoDecoder& d) { return d.init_random(seed + 1); },
      [seed](h3_audio::gpu::GpuAudioDecoder& d) { return d.init_random(seed + 2); });
}

Expected<Tensor> cuda_encode_prompt(const std::string& dir, const Tensor& token_ids, int64_t layer,
                                   const TextEncoderPlacement& placement) {
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextWeights host, qwen3vl::load_text_weights(dir, layer));
  const qwen3vl::gpu::TextStreaming streaming{placement.streamed, placement.slots, weights::WeightTier::kHost, -1};
  OROCHI_ASSIGN_OR_RETURN(auto encoder, qwen3vl::gpu::GpuTextEncoder::create(host.config, layer, placement.device,
                                                                             token_ids.numel(), streaming,
                                                                             placement.precision));
  OROCHI_RETURN_IF_ERROR(encoder->upload(host));
  return encoder->encode_text(token_ids);  // the encoder and its memory go when this returns
}

}  // namespace orochi::engine::cuda_backend
