#include "pipeline/t2va.h"

#include <chrono>

#include "core/random.h"
#include "models/h3_audio_vae/decoder.h"
#include "models/h3_video_vae/pixels.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/finite_check.h"
#include "pipeline/latent_packing.h"
#include "pipeline/packed_layout.h"

namespace orochi::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int64_t kAudioChannels = 2;  // stereo, channel-major rows


}  // namespace

T2vaShape shape_of(const T2vaRequest& r) {
  return {r.width, r.height, r.frames, r.steps, r.video_shift, r.audio_shift,
          r.text_features.defined() && r.text_features.ndim() == 2 ? r.text_features.dim(0) : 0};
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
  if (shape.text_rows < 1 || shape.text_rows > kMaxTextRows)
    return invalid_argument("the text conditioning has " + std::to_string(shape.text_rows) +
                            " rows; it must have 1 to " + std::to_string(kMaxTextRows) + " (--text-rows)");
  // Two schedules with one grid: N grid points give N - 1 evaluations.
  OROCHI_ASSIGN_OR_RETURN(plan.video_schedule, make_h3_schedule(shape.steps + 1, shape.video_shift));
  OROCHI_ASSIGN_OR_RETURN(plan.audio_schedule, make_h3_schedule(shape.steps + 1, shape.audio_shift));
  LayoutRequest layout_request;
  layout_request.text_rows = shape.text_rows;
  layout_request.latent_frames = plan.geometry.latent_frames;
  layout_request.latent_height = plan.geometry.latent_height;
  layout_request.latent_width = plan.geometry.latent_width;
  layout_request.audio_latents = plan.geometry.audio_latents;
  layout_request.audio_channels = kAudioChannels;
  layout_request.patch_h = config.patch_size[1];
  layout_request.patch_w = config.patch_size[2];
  OROCHI_ASSIGN_OR_RETURN(plan.layout, build_packed_layout(layout_request));
  const TimestepPlan tables = plan_timesteps(plan.layout, plan.video_schedule, plan.audio_schedule);
  plan.table_timesteps = tables.timesteps.numel();
  plan.steps = tables.steps();
  return plan;
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
  const Tensor& text = request.text_features;
  if (!text.defined() || text.dtype() != DType::kF32 || text.ndim() != 2 || text.dim(0) != plan.shape.text_rows ||
      text.dim(1) != config.text_dim)
    return shape_mismatch("text features must be f32 [" + std::to_string(plan.shape.text_rows) + ", " +
                          std::to_string(config.text_dim) + "] as planned, got " +
                          (text.defined() ? text.describe() : std::string("nothing")));
  const VideoGeometry& geometry = plan.geometry;
  const PackedLayout& layout = plan.layout;
  const H3Schedule& video_schedule = plan.video_schedule;
  const H3Schedule& audio_schedule = plan.audio_schedule;
  T2vaResult result;
  result.geometry = geometry;
  result.packed_rows = layout.rows;
  result.text_rows = request.text_features.dim(0);

  // Noise as the pipeline draws it: the video as a latent tensor, then patchified; the audio
  // directly in row layout.
  const PatchSize patch{config.patch_size[0], config.patch_size[1], config.patch_size[2]};
  const Tensor video_noise = normal_tensor(
      {config.in_channels, geometry.latent_frames, geometry.latent_height, geometry.latent_width}, request.seed,
      kVideoNoiseStream);  // [C, T, H, W]
  DenoiseRequest denoise_request;
  denoise_request.layout = &layout;
  denoise_request.video_schedule = &video_schedule;
  denoise_request.audio_schedule = &audio_schedule;
  denoise_request.text = request.text_features;
  OROCHI_ASSIGN_OR_RETURN(denoise_request.video_rows, patchify_video_latents(video_noise, patch));
  denoise_request.audio_rows = normal_tensor({kAudioChannels * geometry.audio_latents, config.audio_in_channels},
                                             request.seed, kAudioNoiseStream);  // [2A, C]
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

  // Video: unpack the target rows (t2va has no conditioning rows), decode, to pixels.
  const auto t_video = Clock::now();
  OROCHI_ASSIGN_OR_RETURN(const Tensor latents,
                          unpatchify_video_rows(denoised.video_rows, config.in_channels, geometry.latent_frames,
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
