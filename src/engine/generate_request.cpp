#include "engine/generate_request.h"

namespace orochi::engine {

const char* reference_flag(ReferenceInput::Kind kind) {
  switch (kind) {
    case ReferenceInput::Kind::kFirstFrame: return "--image";
    case ReferenceInput::Kind::kLastFrame: return "--last-image";
    case ReferenceInput::Kind::kImage: return "--ref-image";
    case ReferenceInput::Kind::kVideo: return "--ref-video";
    case ReferenceInput::Kind::kAudio: return "--ref-audio";
  }
  return "?";
}

std::string workflow_of(const GenerateRequest& request) {
  if (request.references.empty()) return "t2va";
  for (const ReferenceInput& r : request.references)
    if (r.kind != ReferenceInput::Kind::kFirstFrame && r.kind != ReferenceInput::Kind::kLastFrame) return "ref2va";
  return "fl2va";
}

pipeline::Sampling sampling_of(const GenerateRequest& r) {
  return pipeline::Sampling{r.preset, r.steps, r.video_shift, r.audio_shift, r.video_sigmas, r.audio_sigmas};
}

void set_sampling(GenerateRequest& r, const pipeline::Sampling& s) {
  r.preset = s.preset;
  r.steps = s.steps;
  r.video_shift = s.video_shift;
  r.audio_shift = s.audio_shift;
  r.video_sigmas = s.video_sigmas;
  r.audio_sigmas = s.audio_sigmas;
}

std::vector<pipeline::KeyframeAnchor> keyframe_anchors(const GenerateRequest& request) {
  std::vector<pipeline::KeyframeAnchor> anchors;
  for (const ReferenceInput& r : request.references)
    if (r.kind == ReferenceInput::Kind::kFirstFrame) anchors.push_back(pipeline::KeyframeAnchor::kFirst);
  for (const ReferenceInput& r : request.references)
    if (r.kind == ReferenceInput::Kind::kLastFrame) anchors.push_back(pipeline::KeyframeAnchor::kLast);
  return anchors;
}

}  // namespace orochi::engine
