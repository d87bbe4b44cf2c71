// MiniMax-H3's conditioning of an fl2va request on a checkpoint (MODELS_H3.md §1.6, §3; diffusers'
// MiniMaxH3FL2VATextEncoderStep): the canvas keyframes through the Qwen3-VL image processor (one
// batch) and vision tower, the presentation ("<Picture i>: " + each keyframe's vision block, then
// the prompt; pipeline/h3_presentation) through the text stack with the tower's features at the
// pad rows (DeepStack added after the first layers, M-RoPE positions of the mixed sequence), and
// hidden_states[layer] as the denoiser's text features. The vision blocks' rows (start, pads, end)
// carry DiT tag 0 (video), the labels and the prompt tag 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/media_in.h"
#include "models/qwen3vl/processor.h"
#include "pipeline/vision_prompt.h"
#include "text/tokenizer.h"

namespace orochi::pipeline {

struct Fl2vaPromptInputs {
  std::string tokenizer;                   // tokenizer.json or its folder
  std::string text_encoder;                // text_encoder/ (Qwen3VLForConditionalGeneration: language model + tower)
  qwen3vl::VisionProcessorConfig processor = qwen3vl::VisionProcessorConfig::h3_images();
  int64_t layer = 50;                      // the hidden state read (kH3TextLayer)
};

// The presentation and the keyframes' pixel values, ready for the conditioner (the engine's plan
// makes them; the CPU or the GPU encodes them). `keyframes`: on the canvas, in packed order.
// Errors: an empty prompt, the builder's, a presentation over `max_tokens`.
Expected<ConditionerInputs> prepare_fl2va_prompt(const text::BpeTokenizer& tokenizer,
                                                 const qwen3vl::VisionProcessorConfig& processor,
                                                 const std::string& prompt, const std::vector<io::RgbImage>& keyframes,
                                                 int64_t max_tokens);

// On the CPU. `keyframes`: on the canvas, in packed order (Fl2vaKeyframes::images); none gives the
// prompt alone (t2va's presentation). Errors: the tokenizer's, an empty prompt, a text encoder
// with no vision tower or too few layers (check_text_encoder), a presentation longer than the text
// encoder's max_position_embeddings, a tower whose patch or merge differ from the processor's.
Expected<PromptConditioning> encode_fl2va_prompt_cpu(const Fl2vaPromptInputs& model, const std::string& prompt,
                                                     const std::vector<io::RgbImage>& keyframes);

}  // namespace orochi::pipeline
