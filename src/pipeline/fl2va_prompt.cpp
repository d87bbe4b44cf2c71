#include "pipeline/fl2va_prompt.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/qwen3vl/rope_index.h"
#include "models/qwen3vl/text_model.h"
#include "models/qwen3vl/vision_model.h"
#include "models/qwen3vl/vision_weights.h"
#include "pipeline/h3_presentation.h"
#include "pipeline/prompt_features.h"
#include "text/tokenizer.h"

namespace orochi::pipeline {

Expected<qwen3vl::VisionProcessorConfig> image_processor_config(const std::string& model_dir) {
  const std::filesystem::path file = std::filesystem::path(model_dir) / "processor" / "preprocessor_config.json";
  if (!std::filesystem::is_regular_file(file)) return qwen3vl::VisionProcessorConfig::h3_images();
  std::ifstream in(file);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return invalid_argument(file.string() + " is not a JSON object: restore the release's processor/ folder");
  Expected<qwen3vl::VisionProcessorConfig> config =
      qwen3vl::VisionProcessorConfig::from_json(json, qwen3vl::VisionProcessorConfig::h3_images());
  if (!config) return Status(config.status().code(), file.string() + ": " + config.status().message());
  return config;
}

namespace {

// The processor's patches must be the ones the tower was trained on.
Status check_processor_matches_tower(const qwen3vl::VisionProcessorConfig& p, const qwen3vl::VisionConfig& v,
                                     const std::string& text_encoder) {
  if (p.patch_size != v.patch_size || p.temporal_patch_size != v.temporal_patch_size ||
      p.merge_size != v.spatial_merge_size)
    return invalid_argument("the image processor cuts " + std::to_string(p.patch_size) + " px patches (temporal " +
                            std::to_string(p.temporal_patch_size) + ", merge " + std::to_string(p.merge_size) +
                            ") but the vision tower in " + text_encoder + " takes " + std::to_string(v.patch_size) +
                            " (temporal " + std::to_string(v.temporal_patch_size) + ", merge " +
                            std::to_string(v.spatial_merge_size) + "): use the processor/ folder of the same release");
  return Status::ok();
}

}  // namespace

Expected<PromptConditioning> encode_fl2va_prompt_cpu(const Fl2vaPromptInputs& model, const std::string& prompt,
                                                     const std::vector<io::RgbImage>& keyframes) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  int64_t max_tokens = 0;
  OROCHI_RETURN_IF_ERROR(check_text_encoder(model.text_encoder, model.layer, &max_tokens));
  OROCHI_ASSIGN_OR_RETURN(const text::BpeTokenizer tokenizer, text::BpeTokenizer::load(model.tokenizer));

  // The keyframes as the processor takes them, batched: pixel values [N, 3·tp·p·p] and one grid each.
  qwen3vl::VisionInputs vision_inputs;
  if (!keyframes.empty()) {
    std::vector<qwen3vl::RgbView> views;
    for (const io::RgbImage& k : keyframes) views.push_back({k.rgb.data(), k.height, k.width});
    OROCHI_ASSIGN_OR_RETURN(vision_inputs, qwen3vl::process_images(views, model.processor));
  }
  OROCHI_ASSIGN_OR_RETURN(const Presentation presentation,
                          build_fl2va_presentation(tokenizer, prompt, vision_inputs.grids, model.processor.merge_size));
  if (presentation.size() > max_tokens)
    return invalid_argument("the fl2va presentation is " + std::to_string(presentation.size()) +
                            " tokens (labels, the keyframes' vision tokens, the prompt); the text encoder takes at "
                            "most " + std::to_string(max_tokens) + ": shorten the prompt");
  const int64_t L = presentation.size();
  std::vector<int64_t> ids(presentation.token_ids.begin(), presentation.token_ids.end());
  const Tensor token_ids = Tensor::from_ints(ids, {L});  // i64 [L]
  OROCHI_ASSIGN_OR_RETURN(const Tensor positions, qwen3vl::rope_index(presentation.kinds, presentation.image_grids,
                                                                      presentation.video_grids,
                                                                      model.processor.merge_size));  // i64 [L, 3]

  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextWeights text, qwen3vl::load_text_weights(model.text_encoder, model.layer));
  qwen3vl::VisionEmbeddings vision;
  if (!keyframes.empty()) {
    OROCHI_ASSIGN_OR_RETURN(const qwen3vl::VisionWeights tower, qwen3vl::load_vision_weights(model.text_encoder));
    OROCHI_RETURN_IF_ERROR(check_processor_matches_tower(model.processor, tower.config, model.text_encoder));
    // f32 [tokens, hidden] and DeepStack [tokens, hidden] each, the images' tokens in sequence order.
    OROCHI_ASSIGN_OR_RETURN(const qwen3vl::VisionFeatures f,
                            qwen3vl::run_vision_tower(tower, vision_inputs.pixel_values, vision_inputs.grids));
    OROCHI_ASSIGN_OR_RETURN(vision, qwen3vl::vision_embeddings(presentation.kinds, text.config.hidden_size, f.features,
                                                               f.deepstack, Tensor(), {}));
  }
  PromptConditioning out;
  OROCHI_ASSIGN_OR_RETURN(out.features, qwen3vl::encode_mixed(text, token_ids, positions, vision));
  out.tags = presentation.dit_tags;
  out.token_ids = presentation.token_ids;
  return out;
}

}  // namespace orochi::pipeline
