// MiniMax-H3's conditioning of a ref2va request (REF2VA.md §4; diffusers'
// MiniMaxH3Ref2VATextEncoderStep): the references in request order presented to Qwen3-VL —
// "<Audio j>: " for each audio-bearing reference, an image's "<Picture i>: " + its vision block, a
// video's "<Video k>: " + per temporal block "<ts seconds>" + its vision block, then the prompt
// (pipeline/h3_presentation) — with every image through one image-processor call and every video's
// sampled frames (2 fps of its 24 fps canvas frames, paired, the last repeated: qwen3vl::
// sample_video_frames) through one video-processor call; then the conditioner (vision_prompt.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/qwen3vl/processor.h"
#include "pipeline/ref2va.h"
#include "pipeline/vision_prompt.h"
#include "text/tokenizer.h"

namespace orochi::pipeline {

struct Ref2vaProcessors {
  qwen3vl::VisionProcessorConfig images = qwen3vl::VisionProcessorConfig::h3_images();
  qwen3vl::VisionProcessorConfig videos = qwen3vl::VisionProcessorConfig::h3_videos();
};

// The presentation and the pixel values of `references` (prepare_ref2va_reference's, request order:
// images at their encode size, videos' frames at 24 fps on their canvas before the 17n + 5 snap).
// Errors: an empty prompt, a video of fewer than 13 frames (2 sampled), the builder's, a
// presentation over `max_tokens`.
Expected<ConditionerInputs> prepare_ref2va_prompt(const text::BpeTokenizer& tokenizer, const Ref2vaProcessors& processors,
                                                  const std::string& prompt,
                                                  const std::vector<Ref2vaReference>& references, int64_t max_tokens);

struct Ref2vaPromptInputs {
  std::string tokenizer;     // tokenizer.json or its folder
  std::string text_encoder;  // text_encoder/ (Qwen3VLForConditionalGeneration: language model + tower)
  Ref2vaProcessors processors;
  int64_t layer = 50;        // the hidden state read
};

// On the CPU: prepare_ref2va_prompt, then encode_conditioner_inputs_cpu.
Expected<PromptConditioning> encode_ref2va_prompt_cpu(const Ref2vaPromptInputs& model, const std::string& prompt,
                                                      const std::vector<Ref2vaReference>& references);

}  // namespace orochi::pipeline
