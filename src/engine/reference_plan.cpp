#include "engine/reference_plan.h"

#include <cmath>
#include <string>

#include "models/qwen3vl/processor.h"
#include "pipeline/reference/reference_audio.h"
#include "pipeline/reference/reference_geometry.h"
#include "pipeline/reference/reference_video.h"

namespace orochi::engine {
namespace {

using Kind = ReferenceInput::Kind;
constexpr int64_t kSpatialRatio = 16;  // the video VAE's (the pipeline holds every model to it)

Status with_flag(const ReferenceInput& r, const Status& s) {
  return Status(s.code(), std::string(reference_flag(r.kind)) + " " + r.path + ": " + s.message());
}

// Qwen's processors (REF2VA.md §4.1): an image at its encode size is one temporal block.
Expected<pipeline::VisionGrid> image_grid(int64_t width, int64_t height) {
  const qwen3vl::VisionProcessorConfig config = qwen3vl::VisionProcessorConfig::h3_images();
  OROCHI_ASSIGN_OR_RETURN(const auto size, qwen3vl::smart_resize_image(height, width, config));
  return pipeline::VisionGrid{1, size.first / config.patch_size, size.second / config.patch_size};
}

// A video: its canvas frames sampled at 2 fps, in temporal pairs (§4.2).
Status video_vision(int64_t frames, int64_t width, int64_t height, pipeline::PresentationReference& out) {
  const qwen3vl::VisionProcessorConfig config = qwen3vl::VisionProcessorConfig::h3_videos();
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::SampledVideoFrames sampled, qwen3vl::sample_video_frames(frames));
  const int64_t sampled_frames = static_cast<int64_t>(sampled.frame_indices.size());
  OROCHI_ASSIGN_OR_RETURN(const auto size, qwen3vl::smart_resize_video(sampled_frames, height, width, config));
  out.grid = {static_cast<int64_t>(sampled.block_timestamps.size()), size.first / config.patch_size,
              size.second / config.patch_size};
  out.block_timestamps = sampled.block_timestamps;
  return Status::ok();
}

// A soundtrack or clip's samples at its own rate, from the header (the stream's duration, else the file's).
int64_t native_samples(const io::MediaProbe& p) {
  const double seconds = p.audio_seconds > 0 ? p.audio_seconds : p.duration_seconds;
  return static_cast<int64_t>(std::llround(seconds * p.sample_rate));
}

Status plan_one(const CheckedReference& c, const GenerateRequest& request, const pipeline::ReferenceRules& rules,
                PlannedReference& out) {
  const io::MediaProbe& p = c.probe;
  const double target_seconds = static_cast<double>(request.frames) / pipeline::reference::kModelFps;
  using PKind = pipeline::PresentationReference::Kind;
  const bool sound = c.input.kind == Kind::kAudio || (c.input.kind == Kind::kVideo && c.input.video_audio && p.has_audio);
  int64_t audio_latents = 0;
  if (sound) {
    const int64_t native = native_samples(p);
    out.audio_samples = pipeline::reference::reference_audio_samples(native, p.sample_rate, target_seconds);
    if (out.audio_samples <= 0) return invalid_argument("its sound has no samples in the target's duration");
    out.length_from_header |= native < static_cast<int64_t>(target_seconds * p.sample_rate);
    audio_latents = (out.audio_samples + pipeline::reference::kAudioVaeHop - 1) / pipeline::reference::kAudioVaeHop;
  }
  out.vision.has_audio = sound;
  switch (c.input.kind) {
    case Kind::kImage: {
      OROCHI_ASSIGN_OR_RETURN(const pipeline::reference::Size size,
                              pipeline::reference::reference_image_size(p.width, p.height, rules.policy,
                                                                        {request.width, request.height},
                                                                        rules.image_short_edge));
      out.width = size.width;
      out.height = size.height;
      out.geometry = pipeline::ReferenceGeometry::image(size.height / kSpatialRatio, size.width / kSpatialRatio);
      out.vision.kind = PKind::kImage;
      OROCHI_ASSIGN_OR_RETURN(out.vision.grid, image_grid(size.width, size.height));
      return Status::ok();
    }
    case Kind::kVideo: {
      OROCHI_ASSIGN_OR_RETURN(const pipeline::reference::Size canvas,
                              pipeline::reference::reference_video_canvas(p.width, p.height, rules.canvas, rules.policy));
      out.width = canvas.width;
      out.height = canvas.height;
      out.frames = std::min(c.frames_at_24fps, request.frames);
      out.length_from_header |= c.frames_at_24fps < request.frames;
      const pipeline::reference::EncodedVideo encoded = pipeline::reference::encoded_reference_video(out.frames);
      out.vae_frames = encoded.frames;
      out.geometry = pipeline::ReferenceGeometry::video(encoded.latents, canvas.height / kSpatialRatio,
                                                        canvas.width / kSpatialRatio, audio_latents);
      out.vision.kind = PKind::kVideo;
      return video_vision(out.frames, canvas.width, canvas.height, out.vision);
    }
    case Kind::kAudio:
      out.geometry = pipeline::ReferenceGeometry::audio(audio_latents);
      out.vision.kind = PKind::kAudio;
      return Status::ok();
    case Kind::kFirstFrame:
    case Kind::kLastFrame:
      break;
  }
  return invalid_argument("a keyframe is not a ref2va reference (pass --ref-image)");
}

}  // namespace

Expected<std::vector<PlannedReference>> plan_references_from_headers(const ReferenceCheck& checked,
                                                                     const GenerateRequest& request,
                                                                     const pipeline::ReferenceRules& rules) {
  std::vector<PlannedReference> out;
  for (const CheckedReference& c : checked.references) {
    PlannedReference planned;
    planned.checked = c;
    if (Status s = plan_one(c, request, rules, planned); !s.is_ok()) return with_flag(c.input, s);
    out.push_back(std::move(planned));
  }
  return out;
}

std::vector<pipeline::ReferenceGeometry> reference_geometry(const std::vector<PlannedReference>& references) {
  std::vector<pipeline::ReferenceGeometry> out;
  for (const PlannedReference& r : references) out.push_back(r.geometry);
  return out;
}

std::vector<pipeline::PresentationReference> presentation_references(const std::vector<PlannedReference>& references) {
  std::vector<pipeline::PresentationReference> out;
  for (const PlannedReference& r : references) out.push_back(r.vision);
  return out;
}

Expected<pipeline::VisionGrid> keyframe_vision_grid(int64_t width, int64_t height) { return image_grid(width, height); }

}  // namespace orochi::engine
