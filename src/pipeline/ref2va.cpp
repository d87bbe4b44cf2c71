#include "pipeline/ref2va.h"

#include <string>

#include "core/stopwatch.h"
#include "pipeline/reference/reference_audio.h"
#include "pipeline/reference/reference_image.h"
#include "pipeline/reference/reference_video.h"

namespace orochi::pipeline {
namespace {

// The pipeline's VAE geometry (check_t2va_models holds every model to it).
constexpr int64_t kSpatialRatio = 16;

const char* kind_name(ReferenceKind kind) {
  switch (kind) {
    case ReferenceKind::kImage: return "image";
    case ReferenceKind::kVideo: return "video";
    case ReferenceKind::kAudio: return "audio";
  }
  return "?";
}

// The frames the VAE encodes of a normalized reference video: D snaps its count down to 17n + 5
// (fewer frames than one clip stay as they are: the encoder pads them with the last one).
int64_t vae_frames(const io::VideoFrames& frames) { return reference::encoded_reference_video(frames.frames).frames; }

// u8 [F, H, W, 3] (its first `count` frames) -> u8 [3, count, H, W], the encoder's layout.
Tensor planar_pixels(const uint8_t* rgb, int64_t count, int64_t height, int64_t width) {
  const int64_t plane = height * width;
  Tensor t = Tensor::uninitialized({3, count, height, width}, DType::kU8);
  uint8_t* p = t.data<uint8_t>();
#pragma omp parallel for schedule(static)  // a copy: the same bytes on any thread count
  for (int64_t f = 0; f < count; ++f) {
    const uint8_t* src = rgb + f * plane * 3;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < plane; ++i) p[(c * count + f) * plane + i] = src[i * 3 + c];
  }
  return t;
}

}  // namespace

ReferenceGeometry Ref2vaReference::geometry() const {
  const int64_t audio_latents =
      has_audio() ? (waveform.dim(1) + reference::kAudioVaeHop - 1) / reference::kAudioVaeHop : 0;
  switch (kind) {
    case ReferenceKind::kImage:
      return ReferenceGeometry::image(image.height / kSpatialRatio, image.width / kSpatialRatio);
    case ReferenceKind::kVideo:
      return ReferenceGeometry::video(reference::encoded_reference_video(frames.frames).latents,
                                      frames.height / kSpatialRatio, frames.width / kSpatialRatio, audio_latents);
    case ReferenceKind::kAudio:
      return ReferenceGeometry::audio(audio_latents);
  }
  return {};
}

Expected<Ref2vaReference> prepare_ref2va_reference(const Ref2vaSource& source, int64_t frames, reference::Size target,
                                                   const ReferenceRules& rules) {
  OROCHI_ASSIGN_OR_RETURN(const int64_t aligned, reference::align_num_frames(frames));
  if (aligned != frames)
    return invalid_argument("the target's frame count must be 17n + 5 (e.g. " + std::to_string(aligned) + "), got " +
                            std::to_string(frames));
  Ref2vaReference out;
  out.kind = source.kind;
  const double seconds = static_cast<double>(frames) / reference::kModelFps;  // D: num_frames / fps
  const bool wants_audio = source.kind == ReferenceKind::kAudio || (source.kind == ReferenceKind::kVideo && source.audio);
  if (wants_audio) {
    if (!source.audio || !source.audio->samples.defined())
      return invalid_argument("an audio reference needs its samples");
    OROCHI_ASSIGN_OR_RETURN(out.waveform, reference::normalize_reference_audio(source.audio->samples,
                                                                               source.audio->sample_rate, seconds));
  }
  switch (source.kind) {
    case ReferenceKind::kImage: {
      if (source.image.pixels() <= 0) return invalid_argument("an image reference needs its pixels");
      OROCHI_ASSIGN_OR_RETURN(out.image, reference::normalize_reference_image(source.image, rules.policy, target,
                                                                              rules.image_short_edge));
      break;
    }
    case ReferenceKind::kVideo: {
      if (source.video.frames <= 0) return invalid_argument("a reference video needs at least one frame");
      // D's canvas from the video's own aspect; under `match` never an upscale (ComfyUI's).
      OROCHI_ASSIGN_OR_RETURN(const reference::Size canvas,
                              reference::reference_video_canvas(source.video.width, source.video.height, rules.canvas,
                                                                rules.policy));
      OROCHI_ASSIGN_OR_RETURN(out.frames, reference::normalize_reference_video(source.video, source.fps, frames,
                                                                               rules.canvas, canvas));
      break;
    }
    case ReferenceKind::kAudio:
      break;
  }
  return out;
}

std::vector<ReferenceGeometry> reference_geometry(const std::vector<Ref2vaReference>& references) {
  std::vector<ReferenceGeometry> out;
  for (const Ref2vaReference& r : references) out.push_back(r.geometry());
  return out;
}

Expected<Ref2vaConditions> encode_ref2va_references(VideoEncoder& video_encoder, AudioEncoder& audio_encoder,
                                                    const std::vector<Ref2vaReference>& references,
                                                    const T2vaProgressCallback& progress,
                                                    const std::atomic<bool>* cancel) {
  Ref2vaConditions out;
  const int64_t n = static_cast<int64_t>(references.size());
  for (int64_t i = 0; i < n; ++i) {
    if (cancel && cancel->load())
      return Status(ErrorCode::kCancelled, "cancelled before encoding reference " + std::to_string(i + 1));
    const Ref2vaReference& r = references[static_cast<size_t>(i)];
    const std::string what = "reference " + std::to_string(i + 1) + " (" + kind_name(r.kind) + ")";
    const auto t0 = Clock::now();
    if (r.kind != ReferenceKind::kAudio) {
      const Tensor pixels = r.kind == ReferenceKind::kImage
                                ? planar_pixels(r.image.rgb.data(), 1, r.image.height, r.image.width)
                                : planar_pixels(r.frames.rgb.data(), vae_frames(r.frames), r.frames.height,
                                                r.frames.width);  // u8 [3, P, H, W]
      Expected<Tensor> z = video_encoder.encode_condition(pixels);  // [C, T_r, h, w]
      if (!z) return Status(z.status().code(), what + ": " + z.status().message());
      out.video_latents.push_back(std::move(z).value());
    } else if (!r.has_audio()) {
      return invalid_argument(what + " has no waveform");
    }
    if (r.has_audio()) {
      Expected<Tensor> rows = audio_encoder.encode_reference_audio(r.waveform);  // [2, a, C_a]
      if (!rows) return Status(rows.status().code(), what + ": " + rows.status().message());
      out.audio_rows.push_back(rows->contiguous().view({rows->dim(0) * rows->dim(1), rows->dim(2)}));  // channel-major
    }
    if (progress) progress({"reference encode", i + 1, n, seconds_since(t0)});
  }
  return out;
}

Expected<T2vaPlan> plan_ref2va(const h3::H3Config& config, const T2vaShape& shape) {
  if (shape.references.empty())
    return invalid_argument("ref2va needs at least one reference (--ref-image, --ref-video, --ref-audio)");
  return plan_t2va(config, shape);
}

Expected<T2vaResult> run_ref2va(models::Denoiser& denoiser, VideoDecoder& video_vae, AudioDecoder& audio_vae,
                                VideoEncoder& video_encoder, AudioEncoder& audio_encoder, const Ref2vaRequest& request,
                                const T2vaPlan& plan, const T2vaRunOptions& options) {
  const std::vector<ReferenceGeometry> planned = plan.shape.references;
  if (planned.empty() || request.references.size() != planned.size())
    return invalid_argument("the ref2va plan has " + std::to_string(planned.size()) + " reference(s), the request " +
                            std::to_string(request.references.size()));
  for (size_t i = 0; i < planned.size(); ++i) {
    const ReferenceGeometry g = request.references[i].geometry();
    const ReferenceGeometry& p = planned[i];
    if (g.kind != p.kind || g.latent_frames != p.latent_frames || g.latent_height != p.latent_height ||
        g.latent_width != p.latent_width || g.audio_latents != p.audio_latents)
      return shape_mismatch("reference " + std::to_string(i + 1) + " is not the one the plan was made for (its " +
                            "latent geometry differs); plan the request with its prepared references");
  }
  if (video_encoder.latent_channels() != plan.model.in_channels)
    return unsupported("the video VAE encoder makes " + std::to_string(video_encoder.latent_channels()) +
                       " latent channels, the transformer denoises " + std::to_string(plan.model.in_channels));
  if (audio_encoder.latent_channels() != plan.model.audio_in_channels)
    return unsupported("the audio VAE encoder makes " + std::to_string(audio_encoder.latent_channels()) +
                       " latent channels, the transformer denoises " + std::to_string(plan.model.audio_in_channels));
  const auto t0 = Clock::now();
  OROCHI_ASSIGN_OR_RETURN(Ref2vaConditions conditions, encode_ref2va_references(video_encoder, audio_encoder,
                                                                               request.references, options.progress,
                                                                               options.cancel));
  T2vaRequest run = request.base;
  run.condition_latents = std::move(conditions.video_latents);
  run.condition_audio_rows = std::move(conditions.audio_rows);
  const double encode_s = seconds_since(t0);
  OROCHI_ASSIGN_OR_RETURN(T2vaResult result, run_t2va(denoiser, video_vae, audio_vae, run, plan, options));
  result.times.condition_encode_s = encode_s;
  return result;
}

}  // namespace orochi::pipeline
