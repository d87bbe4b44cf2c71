#include "pipeline/t2va.h"

#include <algorithm>
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

// The target's latent grid, audio and patch sizes, which t2va's and ref2va's layout requests share.
template <typename LayoutRequestT>
void set_target_grid(LayoutRequestT& r, const h3::H3Config& config, const VideoGeometry& geometry) {
  r.latent_frames = geometry.latent_frames;
  r.latent_height = geometry.latent_height;
  r.latent_width = geometry.latent_width;
  r.audio_latents = geometry.audio_latents;
  r.audio_channels = kAudioChannels;
  r.patch_h = config.patch_size[1];
  r.patch_w = config.patch_size[2];
}

// The packed layout of a shape: ref2va's with references, else t2va's with its keyframes; the text
// rows tagged as the shape says (all 1 without tags).
Expected<PackedLayout> layout_of(const h3::H3Config& config, const T2vaShape& shape, const VideoGeometry& geometry) {
  const std::vector<int64_t> tags =
      shape.text_tags.empty() ? std::vector<int64_t>(static_cast<size_t>(shape.text_rows), 1) : shape.text_tags;
  if (!shape.references.empty()) {
    Ref2vaLayoutRequest r;
    set_target_grid(r, config, geometry);
    r.text_tags = tags;
    r.references = shape.references;
    OROCHI_ASSIGN_OR_RETURN(Ref2vaLayout layout, build_ref2va_layout(r));
    return std::move(layout.packed);
  }
  LayoutRequest r;
  set_target_grid(r, config, geometry);
  r.text_rows = shape.text_rows;
  r.keyframes = shape.keyframes;
  OROCHI_ASSIGN_OR_RETURN(PackedLayout layout, build_packed_layout(r));
  std::copy(tags.begin(), tags.end(), layout.token_tags.data<int64_t>());  // text rows come first
  return layout;
}

// The conditions a plan reserves, in packed order: each visual condition's latent shape
// [C, T, h, w] (a keyframe: one frame on the target grid) and each audio-bearing reference's rows.
struct ConditionShapes {
  std::vector<Shape> latents;
  std::vector<int64_t> audio_rows;
};
ConditionShapes condition_shapes(const T2vaPlan& plan) {
  ConditionShapes c;
  const int64_t C = plan.model.in_channels;
  for (size_t i = 0; i < plan.shape.keyframes.size(); ++i)
    c.latents.push_back({C, 1, plan.geometry.latent_height, plan.geometry.latent_width});
  for (const ReferenceGeometry& g : plan.shape.references) {
    if (g.kind != ReferenceKind::kAudio) c.latents.push_back({C, g.latent_frames, g.latent_height, g.latent_width});
    if (g.audio_latents > 0) c.audio_rows.push_back(kAudioChannels * g.audio_latents);
  }
  return c;
}

}  // namespace

RowCounts row_counts(const T2vaPlan& plan) {
  RowCounts n;
  const PackedLayout& layout = plan.layout;
  n.text = layout.text_indices.numel();
  n.target_video = layout.video_indices.numel() - layout.condition_video_rows;
  n.target_audio = layout.audio_indices.numel() - layout.condition_audio_rows;
  if (!plan.shape.keyframes.empty()) n.keyframes = layout.condition_video_rows;
  for (const ReferenceGeometry& g : plan.shape.references) {
    const int64_t visual = g.latent_frames * (g.latent_height / plan.model.patch_size[1]) *
                           (g.latent_width / plan.model.patch_size[2]);
    const int64_t audio = kAudioChannels * g.audio_latents;
    switch (g.kind) {
      case ReferenceKind::kImage: ++n.images, n.image_rows += visual; break;
      case ReferenceKind::kVideo: ++n.videos, n.video_rows += visual, n.soundtrack_rows += audio; break;
      case ReferenceKind::kAudio: ++n.audio_clips, n.audio_clip_rows += audio; break;
    }
  }
  return n;
}

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
  if (!keys.empty() && !shape.references.empty())
    return invalid_argument("a request takes keyframes (fl2va: --image, --last-image) or references (ref2va: "
                            "--ref-image, --ref-video, --ref-audio), not both");
  if (shape.text_rows < 1 || shape.text_rows > kMaxTextRows)
    return invalid_argument("the text conditioning has " + std::to_string(shape.text_rows) +
                            " rows; it must have 1 to " + std::to_string(kMaxTextRows) + " (--text-rows)");
  if (!shape.text_tags.empty() && static_cast<int64_t>(shape.text_tags.size()) != shape.text_rows)
    return invalid_argument("the text conditioning has " + std::to_string(shape.text_rows) + " rows and " +
                            std::to_string(shape.text_tags.size()) + " tags; give one tag per row");
  // Two schedules of steps + 1 grid points each, given or shifted (pipeline/sampling.h).
  OROCHI_ASSIGN_OR_RETURN(plan.video_schedule,
                          sampling_schedule(shape.steps, shape.video_shift, shape.video_sigmas, "--sigmas"));
  OROCHI_ASSIGN_OR_RETURN(plan.audio_schedule,
                          sampling_schedule(shape.steps, shape.audio_shift, shape.audio_sigmas, "--audio-sigmas"));
  OROCHI_ASSIGN_OR_RETURN(plan.layout, layout_of(config, shape, plan.geometry));
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
  const ConditionShapes wanted = condition_shapes(plan);
  const char* condition = plan.shape.references.empty() ? "keyframe" : "visual reference";
  if (request.condition_latents.size() != wanted.latents.size())
    return shape_mismatch("the plan reserves " + std::to_string(wanted.latents.size()) + " " + condition +
                          " condition(s), the request carries " + std::to_string(request.condition_latents.size()) +
                          " latent(s)");
  if (request.condition_audio_rows.size() != wanted.audio_rows.size())
    return shape_mismatch("the plan reserves " + std::to_string(wanted.audio_rows.size()) +
                          " reference audio block(s), the request carries " +
                          std::to_string(request.condition_audio_rows.size()));
  const PatchSize patch{config.patch_size[0], config.patch_size[1], config.patch_size[2]};
  // Conditioning first (D PrepareConditionLatentsStep: one draw per visual condition, then the anchor
  // mix t·z + (1 − t)·ε at t = 0.999, then patchify), then the target's noise as the pipeline draws
  // it: the video as a latent tensor, then patchified; the audio directly in row layout. Reference
  // audio rows go in clean, before the target's (D Ref2VAPrepareLatentsStep).
  std::vector<Tensor> video_parts;
  for (size_t i = 0; i < wanted.latents.size(); ++i) {
    const Tensor& z = request.condition_latents[i];
    const Shape& want = wanted.latents[i];
    if (!z.defined() || z.dtype() != DType::kF32 || z.shape() != want)
      return shape_mismatch(std::string(condition) + " " + std::to_string(i + 1) + "'s latent must be f32 " +
                            shape_to_string(want) + " as planned (the target canvas is " +
                            std::to_string(geometry.width) + "x" + std::to_string(geometry.height) + "), got " +
                            (z.defined() ? z.describe() : std::string("nothing")));
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
  std::vector<Tensor> audio_parts;
  for (size_t i = 0; i < wanted.audio_rows.size(); ++i) {
    const Tensor& rows = request.condition_audio_rows[i];
    const Shape want = {wanted.audio_rows[i], config.audio_in_channels};
    if (!rows.defined() || rows.dtype() != DType::kF32 || rows.shape() != want)
      return shape_mismatch("reference audio block " + std::to_string(i + 1) + " must be f32 " +
                            shape_to_string(want) + " as planned, got " +
                            (rows.defined() ? rows.describe() : std::string("nothing")));
    audio_parts.push_back(rows.contiguous());
  }
  audio_parts.push_back(normal_tensor({kAudioChannels * geometry.audio_latents, config.audio_in_channels},
                                      request.seed, kAudioNoiseStream));  // [2A, C]
  d.audio_rows = stack_rows(audio_parts);
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
  result.condition_audio_rows = layout.condition_audio_rows;
  result.rows = row_counts(plan);
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

  // Video: cut the conditioning rows off (D AfterDenoiseStep), unpack the target rows,
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

  // Audio: the reference rows cut off; the channel-major rows are the mono VAE's batch of two.
  OROCHI_RETURN_IF_ERROR(cancelled("the audio decode"));
  const auto t_audio = Clock::now();
  const Tensor target_audio =
      denoised.audio_rows.slice(0, layout.condition_audio_rows, denoised.audio_rows.dim(0)).contiguous();
  OROCHI_ASSIGN_OR_RETURN(const Tensor audio_latents, audio_rows_to_batch(target_audio, kAudioChannels));
  OROCHI_ASSIGN_OR_RETURN(result.waveform, audio_vae.decode(audio_latents));  // [2, 800·A]
  OROCHI_RETURN_IF_ERROR(check_finite(result.waveform, "the audio decode (" + audio_vae.device_name() + ")"));
  result.sample_rate = audio_vae.sample_rate();
  result.times.audio_decode_s = seconds_since(t_audio);
  if (progress) progress({"audio decode", 1, 1, result.times.audio_decode_s});
  return result;
}

}  // namespace orochi::pipeline
