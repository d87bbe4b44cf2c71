#include "pipeline/fl2va_prompt.h"

#include "pipeline/prompt_features.h"

namespace orochi::pipeline {

Expected<ConditionerInputs> prepare_fl2va_prompt(const text::BpeTokenizer& tokenizer,
                                                 const qwen3vl::VisionProcessorConfig& processor,
                                                 const std::string& prompt, const std::vector<io::RgbImage>& keyframes,
                                                 int64_t max_tokens) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  ConditionerInputs inputs;
  inputs.image_processor = processor;
  // The keyframes as the processor takes them, batched: pixel values [N, 3·tp·p·p] and one grid each.
  if (!keyframes.empty()) {
    std::vector<qwen3vl::RgbView> views;
    for (const io::RgbImage& k : keyframes) views.push_back({k.rgb.data(), k.height, k.width});
    OROCHI_ASSIGN_OR_RETURN(inputs.images, qwen3vl::process_images(views, processor));
  }
  OROCHI_ASSIGN_OR_RETURN(inputs.presentation,
                          build_fl2va_presentation(tokenizer, prompt, inputs.images.grids, processor.merge_size));
  OROCHI_RETURN_IF_ERROR(finish_conditioner_inputs(inputs, max_tokens, "the fl2va presentation"));
  return inputs;
}

Expected<PromptConditioning> encode_fl2va_prompt_cpu(const Fl2vaPromptInputs& model, const std::string& prompt,
                                                     const std::vector<io::RgbImage>& keyframes) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  int64_t max_tokens = 0;
  OROCHI_RETURN_IF_ERROR(check_text_encoder(model.text_encoder, model.layer, &max_tokens));
  OROCHI_ASSIGN_OR_RETURN(const text::BpeTokenizer tokenizer, text::BpeTokenizer::load(model.tokenizer));
  OROCHI_ASSIGN_OR_RETURN(const ConditionerInputs inputs,
                          prepare_fl2va_prompt(tokenizer, model.processor, prompt, keyframes, max_tokens));
  return encode_conditioner_inputs_cpu(model.text_encoder, model.layer, inputs);
}

}  // namespace orochi::pipeline
