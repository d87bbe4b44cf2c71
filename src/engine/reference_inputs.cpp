#include "engine/reference_inputs.h"

#include <cmath>
#include <string>

#include "engine/reference_checks.h"
#include "io/media_in.h"

namespace orochi::engine {
namespace {

using Kind = ReferenceInput::Kind;

Status with_flag(const ReferenceInput& r, const Status& s) {
  return Status(s.code(), std::string(reference_flag(r.kind)) + " " + r.path + ": " + s.message());
}

// Source frames a video needs for `frames` slots at 24 fps: frame i fills slots from floor(i·24/fps + 0.5),
// so ceil(frames·fps/24) + 1 frames cover them (a margin of two more; the rest is never used).
int64_t frames_needed(int64_t frames, double fps) {
  if (!(fps > 0)) return 0;  // unknown: read them all
  return static_cast<int64_t>(std::ceil(static_cast<double>(frames) * fps / 24.0)) + 3;
}

Expected<pipeline::Ref2vaSource> read_source(const CheckedReference& checked, int64_t frames) {
  const ReferenceInput& r = checked.input;
  pipeline::Ref2vaSource s;
  switch (r.kind) {
    case Kind::kImage: {
      s.kind = pipeline::ReferenceKind::kImage;
      OROCHI_ASSIGN_OR_RETURN(s.image, io::read_image(r.path));
      return s;
    }
    case Kind::kVideo: {
      s.kind = pipeline::ReferenceKind::kVideo;
      io::VideoReadOptions options;
      options.max_frames = frames_needed(frames, checked.probe.fps);
      options.read_soundtrack = r.video_audio;
      OROCHI_ASSIGN_OR_RETURN(io::DecodedVideo video, io::read_video(r.path, options));
      if (video.frames.frames == 0) return invalid_argument("the video decodes to no frames; give a video with pictures");
      s.video = std::move(video.frames);
      s.fps = video.fps;
      if (r.video_audio && video.has_soundtrack) s.audio = std::move(video.soundtrack);
      return s;
    }
    case Kind::kAudio: {
      s.kind = pipeline::ReferenceKind::kAudio;
      OROCHI_ASSIGN_OR_RETURN(s.audio, io::read_audio(r.path));
      return s;
    }
    case Kind::kFirstFrame:
    case Kind::kLastFrame:
      break;
  }
  return invalid_argument("a keyframe is not a ref2va reference (pass --ref-image)");
}

}  // namespace

pipeline::ReferenceRules reference_rules(RefSize size, bool demo) {
  pipeline::ReferenceRules rules;
  if (demo) {
    rules.canvas = pipeline::reference::CanvasRule{32, 192, 192 * 320};
    rules.image_short_edge = 2048 * 192 / 768;  // 512
  }
  rules.policy = size == RefSize::kMatch ? pipeline::reference::ImageSizePolicy::kMatch
                                         : pipeline::reference::ImageSizePolicy::kShortEdge;
  return rules;
}

Expected<std::vector<pipeline::Ref2vaReference>> read_references(const GenerateRequest& request,
                                                                  const pipeline::ReferenceRules& rules) {
  OROCHI_ASSIGN_OR_RETURN(const ReferenceCheck checked, check_references(request));
  std::vector<pipeline::Ref2vaReference> out;
  for (const CheckedReference& c : checked.references) {
    Expected<pipeline::Ref2vaSource> source = read_source(c, request.frames);
    if (!source) return with_flag(c.input, source.status());
    Expected<pipeline::Ref2vaReference> prepared =
        pipeline::prepare_ref2va_reference(*source, request.frames, {request.width, request.height}, rules);
    if (!prepared) return with_flag(c.input, prepared.status());
    out.push_back(std::move(prepared).value());
  }
  return out;
}

}  // namespace orochi::engine
