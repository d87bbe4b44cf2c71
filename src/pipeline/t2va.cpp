#include "pipeline/t2va.h"

#include <chrono>
#include <cstring>

#include "core/stopwatch.h"
#include "core/random.h"
#include "models/h3_audio_vae/decoder.h"
#include "models/h3_video_vae/pixels.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/finite_check.h"
#include "pipeline/latent_packing.h"
#include "pipeline/packed_layout.h"
#include "pipeline/sampling.h"
#include "pipeline/scheduler_h3.h"

namespace orochi::pipeline {
namespace {


constexpr int64_t kAudioChannels = 2;  // stereo, channel-major rows

// Row blocks f32 [N_i, W] (contiguous) stacked in order: [Σ N_i, W].
Tensor stack_rows(const std::vector<Tensor>& parts) {
  if (parts.size() == 1) return parts[0];
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.dim(0);
  Tensor out = Tensor::uninitialized({rows, parts[0].dim(1)}, DType::kF32);
  float* dst = out.data<float>();
  for (const Tensor& p : parts) {
    const Tensor c = p.contiguous();
    std::memcpy(dst, c.data<float>(), static_cast<size_t>(c.numel()) * sizeof(float));
    dst += c.numel();
  }
  return out;
}


}  // namespace

T2vaShape shape_of(const T2vaRequest& r) {
  T2vaShape shape;
  shape.width = r.width;
  shape.height = r.height;
  shape.frames = r.frames;
  shape.steps = r.steps;
  shape.video_shift = r.video_shift;
  shape.audio_shift = r.audio_shift;
  shape.video_sigmas = r.video_sigmas;
  shape.audio_sigmas = r.audio_sigmas;
  shape.text_rows = r.text_features.defined() && r.text_features.ndim() == 2 ? r.text_features.dim(0) : 0;
  return shape;
}

h3::gpu::RequestSize request_size(const T2vaPlan& plan) {
  return {plan.layout.rows, plan.layout.text_indices.numel(), plan.layout.video_indices.numel(),
          plan.layout.audio_indices.numel(), plan.table_timesteps};
}

Expected<T2vaPlan> plan_t2va(const h3::H3Config& config, const T2vaShape& shape) {
  T2vaPlan plan;
  plan.model = config;
  plan.shape = shape;
  OROCHI_ASSIGN_OR_RETURN(plan.geometry, video_geometry(shape.width, shape.height, shape.frames));
  if (shape.steps < 1 || shape.steps > 1000)
    return invalid_argument("--steps must be in [1, 1000], got " + std::to_string(shape.steps));
  const std::vector<KeyframeAnchor>& keys = shape.keyframes;
  if (keys.size() > 2 || (keys.size() == 2 && (keys[0] != KeyframeAnchor::kFirst || keys[1] != KeyframeAnchor::kLast)))
    return invalid_argument("fl2va takes at most one first keyframe (--image) and one last keyframe (--last-image), "
                            "the first before the last");
  if (shape.text_rows < 1 || shape.text_rows > kMaxTextRows)
    return invalid_argument("the text conditioning has " + std::to_string(shape.text_rows) +
                            " rows; it must have 1 to " + std::to_string(kMaxTextRows) + " (--text-rows)");
  // Two schedules of steps + 1 grid points each, given or shifted (pipeline/sampling.h).
  OROCHI_ASSIGN_OR_RETURN(plan.video_schedule,
                          sampling_schedule(shape.steps, shape.video_shift, shape.video_sigmas, "--sigmas"));
  OROCHI_ASSIGN_OR_RETURN(plan.audio_schedule,
                          sampling_schedule(shape.steps, shape.audio_shift, shape.audio_sigmas, "--audio-sigmas"));
  LayoutRequest layout_request;
  layout_request.text_rows = shape.text_rows;
  layout_request.latent_frames = plan.geometry.latent_frames;
  layout_request.latent_height = plan.geometry.latent_height;
  layout_request.latent_width = plan.geometry.latent_width;
  layout_request.audio_latents = plan.geometry.audio_latents;
  layout_request.audio_channels = kAudioChannels;
  layout_request.patch_h = config.patch_size[1];
  layout_request.patch_w = config.patch_size[2];
  layout_request.keyframes = shape.keyframes;
  OROCHI_ASSIGN_OR_RETURN(plan.layout, build_packed_layout(layout_request));
  const TimestepPlan tables = plan_timesteps(plan.layout, plan.video_schedule, plan.audio_schedule);
  plan.table_timesteps = tables.timesteps.numel();
  plan.steps = tables.steps();
  return plan;
}

Expected<DenoiseRequest> denoise_inputs(const T2vaRequest& request, const T2vaPlan& plan) {
  const h3::H3Config& config = plan.model;
  const Tensor& text = request.text_features;
  if (!text.defined() || text.dtype() != DType::kF32 || text.ndim() != 2 || text.dim(0) != plan.shape.text_rows ||
      text.dim(1) != config.text_dim)
    return shape_mismatch("text features must be f32 [" + std::to_string(plan.shape.text_rows) + ", " +
                          std::to_string(config.text_dim) + "] as planned, got " +
                          (text.defined() ? text.describe() : std::string("nothing")));
  const VideoGeometry& geometry = plan.geometry;
  const size_t keyframes = plan.shape.keyframes.size();
  if (request.condition_latents.size() != keyframes)
    return shape_mismatch("the plan reserves " + std::to_string(keyframes) + " keyframe conditioning frame(s), the "
                          "request carries " + std::to_string(request.condition_latents.size()) + " latent(s)");
  const PatchSize patch{config.patch_size[0], config.patch_size[1], config.patch_size[2]};
  // Conditioning first (D PrepareConditionLatentsStep: one draw per condition, then the anchor mix
  // t·z + (1 − t)·ε at t = 0.999, then patchify), then the target's noise as the pipeline draws it:
  // the video as a latent tensor, then patchified; the audio directly in row layout.
  std::vector<Tensor> video_parts;
  for (size_t i = 0; i < keyframes; ++i) {
    const Tensor& z = request.condition_latents[i];
    const Shape want = {config.in_channels, 1, geometry.latent_height, geometry.latent_width};
    if (!z.defined() || z.dtype() != DType::kF32 || z.shape() != want)
      return shape_mismatch("keyframe " + std::to_string(i + 1) + "'s latent must be f32 " + shape_to_string(want) +
                            " (the canvas " + std::to_string(geometry.width) + "x" + std::to_string(geometry.height) +
                            "), got " + (z.defined() ? z.describe() : std::string("nothing")));
    const Tensor noise = normal_tensor(want, request.seed, kConditionNoiseStream + i);
    OROCHI_ASSIGN_OR_RETURN(Tensor rows,
                            patchify_video_latents(h3_scale_noise(z.contiguous(), kConditionTimestep, noise), patch));
    video_parts.push_back(std::move(rows));
  }
  const Tensor video_noise = normal_tensor(
      {config.in_channels, geometry.latent_frames, geometry.latent_height, geometry.latent_width}, request.seed,
      kVideoNoiseStream);  // [C, T, H, W]
  OROCHI_ASSIGN_OR_RETURN(Tensor target_rows, patchify_video_latents(video_noise, patch));
  video_parts.push_back(std::move(target_rows));
  DenoiseRequest d;
  d.layout = &plan.layout;
  d.video_schedule = &plan.video_schedule;
  d.audio_schedule = &plan.audio_schedule;
  d.text = text;
  d.video_rows = stack_rows(video_parts);
  d.audio_rows = normal_tensor({kAudioChannels * geometry.audio_latents, config.audio_in_channels}, request.seed,
                               kAudioNoiseStream);  // [2A, C]
  return d;
}

Expected<T2vaResult> run_t2va(models::Denoiser& denoiser, VideoDecoder& video_vae, AudioDecoder& audio_vae,
                              const T2vaRequest& request, const T2vaPlan& plan, const T2vaRunOptions& options) {
  const T2vaProgressCallback& progress = options.progress;
  auto cancelled = [&](const char* before) -> Status {
    if (options.cancel && options.cancel->load()) return Status(ErrorCode::kCancelled, std::string("cancelled before ") + before);
    return Status::ok();
  };
  const h3::H3Config& config = plan.model;
  const auto t_prepare = Clock::now();
  const VideoGeometry& geometry = plan.geometry;
  const PackedLayout& layout = plan.layout;
  T2vaResult result;
  result.geometry = geometry;
  result.packed_rows = layout.rows;
  result.condition_rows = layout.condition_video_rows;
  OROCHI_ASSIGN_OR_RETURN(const DenoiseRequest denoise_request, denoise_inputs(request, plan));
  result.text_rows = request.text_features.dim(0);
  const PatchSize patch{config.patch_size[0], config.patch_size[1], config.patch_size[2]};
  const double setup_s = seconds_since(t_prepare);

  auto on_step = [&](const StepProgress& p) {
    if (progress) progress({"denoise", p.step, p.steps, p.seconds});
  };
  OROCHI_ASSIGN_OR_RETURN(DenoiseResult denoised, denoise(denoiser, denoise_request, on_step, options.cancel));
  result.times.prepare_s = setup_s + denoised.prepare_seconds;
  result.times.step_s = denoised.step_seconds;
  result.table_timesteps = denoised.table_timesteps;
  // The decode phase gets the denoiser's memory: its request buffers, and its weights unless the
  // plan keeps the model loaded beside the decoders.
  if (options.keep_denoiser_weights) denoiser.release_request();
  else denoiser.release();
  OROCHI_RETURN_IF_ERROR(cancelled("the video decode"));

  // Video: cut the keyframe conditioning rows off (D AfterDenoiseStep), unpack the target rows,
  // decode, to pixels.
  const auto t_video = Clock::now();
  const Tensor target_rows =
      denoised.video_rows.slice(0, layout.condition_video_rows, denoised.video_rows.dim(0)).contiguous();
  OROCHI_ASSIGN_OR_RETURN(const Tensor latents,
                          unpatchify_video_rows(target_rows, config.in_channels, geometry.latent_frames,
                                                geometry.latent_height, geometry.latent_width, patch));
  auto on_chunk = [&](int64_t done, int64_t total, double seconds) {
    if (progress) progress({"video decode", done, total, seconds});
  };
  OROCHI_ASSIGN_OR_RETURN(const Tensor decoded, video_vae.decode(latents, on_chunk));
  OROCHI_RETURN_IF_ERROR(check_finite(decoded, "the video decode (" + video_vae.device_name() + ")"));
  OROCHI_ASSIGN_OR_RETURN(result.frames, h3vae::to_pixel_frames(decoded));  // [F, 3, H, W]
  result.times.video_decode_s = seconds_since(t_video);

  // Audio: the channel-major rows are the mono VAE's batch of two.
  OROCHI_RETURN_IF_ERROR(cancelled("the audio decode"));
  const auto t_audio = Clock::now();
  OROCHI_ASSIGN_OR_RETURN(const Tensor audio_latents, audio_rows_to_batch(denoised.audio_rows, kAudioChannels));
  OROCHI_ASSIGN_OR_RETURN(result.waveform, audio_vae.decode(audio_latents));  // [2, 800·A]
  OROCHI_RETURN_IF_ERROR(check_finite(result.waveform, "the audio decode (" + audio_vae.device_name() + ")"));
  result.sample_rate = audio_vae.sample_rate();
  result.times.audio_decode_s = seconds_since(t_audio);
  if (progress) progress({"audio decode", 1, 1, result.times.audio_decode_s});
  return result;
}

}  // namespace orochi::pipeline
