#include "pipeline/ref2va_prompt.h"

#include "pipeline/prompt_features.h"
#include "pipeline/reference/reference_video.h"

namespace orochi::pipeline {
namespace {

// The rate at which D samples a reference video's 24 fps frames for Qwen (REF2VA.md §4.2).
constexpr double kConditionerSampleFps = 2.0;

}  // namespace

Expected<ConditionerInputs> prepare_ref2va_prompt(const text::BpeTokenizer& tokenizer, const Ref2vaProcessors& processors,
                                                  const std::string& prompt,
                                                  const std::vector<Ref2vaReference>& references, int64_t max_tokens) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  ConditionerInputs inputs;
  inputs.image_processor = processors.images;
  inputs.video_processor = processors.videos;
  std::vector<qwen3vl::RgbView> images;
  std::vector<std::vector<qwen3vl::RgbView>> videos;
  std::vector<std::vector<double>> timestamps;  // per video, one per temporal block
  for (size_t i = 0; i < references.size(); ++i) {
    const Ref2vaReference& r = references[i];
    if (r.kind == ReferenceKind::kImage) images.push_back({r.image.rgb.data(), r.image.height, r.image.width});
    if (r.kind != ReferenceKind::kVideo) continue;
    Expected<qwen3vl::SampledVideoFrames> sampled =
        qwen3vl::sample_video_frames(r.frames.frames, reference::kModelFps, kConditionerSampleFps, processors.videos.temporal_patch_size);
    if (!sampled)
      return Status(sampled.status().code(), "reference " + std::to_string(i + 1) + " (a video of " +
                                                 std::to_string(r.frames.frames) +
                                                 " frames at 24 fps): " + sampled.status().message());
    std::vector<qwen3vl::RgbView> frames;
    for (const int64_t f : sampled->frame_indices) frames.push_back({r.frames.frame(f), r.frames.height, r.frames.width});
    videos.push_back(std::move(frames));
    timestamps.push_back(std::move(sampled->block_timestamps));
  }
  if (!images.empty()) {
    OROCHI_ASSIGN_OR_RETURN(inputs.images, qwen3vl::process_images(images, processors.images));
  }
  if (!videos.empty()) {
    OROCHI_ASSIGN_OR_RETURN(inputs.videos, qwen3vl::process_videos(videos, processors.videos));
  }
  // The presentation's references: each image and video with its grid, in request order.
  std::vector<PresentationReference> presented;
  size_t image = 0, video = 0;
  for (const Ref2vaReference& r : references) {
    PresentationReference p;
    p.has_audio = r.has_audio();
    if (r.kind == ReferenceKind::kImage) {
      p.kind = PresentationReference::Kind::kImage;
      p.grid = inputs.images.grids[image++];
    } else if (r.kind == ReferenceKind::kVideo) {
      p.kind = PresentationReference::Kind::kVideo;
      p.grid = inputs.videos.grids[video];
      p.block_timestamps = timestamps[video++];
    } else {
      p.kind = PresentationReference::Kind::kAudio;
    }
    presented.push_back(std::move(p));
  }
  OROCHI_ASSIGN_OR_RETURN(inputs.presentation,
                          build_ref2va_presentation(tokenizer, prompt, presented, processors.images.merge_size));
  OROCHI_RETURN_IF_ERROR(finish_conditioner_inputs(inputs, max_tokens, "the ref2va presentation"));
  return inputs;
}

Expected<PromptConditioning> encode_ref2va_prompt_cpu(const Ref2vaPromptInputs& model, const std::string& prompt,
                                                      const std::vector<Ref2vaReference>& references) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  int64_t max_tokens = 0;
  OROCHI_RETURN_IF_ERROR(check_text_encoder(model.text_encoder, model.layer, &max_tokens));
  OROCHI_ASSIGN_OR_RETURN(const text::BpeTokenizer tokenizer, text::BpeTokenizer::load(model.tokenizer));
  OROCHI_ASSIGN_OR_RETURN(const ConditionerInputs inputs,
                          prepare_ref2va_prompt(tokenizer, model.processors, prompt, references, max_tokens));
  return encode_conditioner_inputs_cpu(model.text_encoder, model.layer, inputs);
}

}  // namespace orochi::pipeline
