#include "pipeline/vision_prompt.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/h3/model_folder_parts.h"
#include "models/qwen3vl/rope_index.h"
#include "models/qwen3vl/text_model.h"
#include "models/qwen3vl/vision_model.h"
#include "models/qwen3vl/vision_weights.h"
#include "pipeline/prompt_features.h"

namespace orochi::pipeline {
namespace {

// processor/<file> of a model folder (either layout: h3::model_folder_parts) read over `defaults`,
// or the defaults without the file.
Expected<qwen3vl::VisionProcessorConfig> processor_config(const std::string& model_dir, const std::string& file_name,
                                                          const qwen3vl::VisionProcessorConfig& defaults) {
  OROCHI_ASSIGN_OR_RETURN(const h3::FolderParts parts, h3::model_folder_parts(model_dir));
  const std::filesystem::path file = std::filesystem::path(parts.processor) / file_name;
  if (!std::filesystem::is_regular_file(file)) return defaults;
  std::ifstream in(file);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return invalid_argument(file.string() + " is not a JSON object: restore the release's processor/ folder");
  Expected<qwen3vl::VisionProcessorConfig> config = qwen3vl::VisionProcessorConfig::from_json(json, defaults);
  if (!config) return Status(config.status().code(), file.string() + ": " + config.status().message());
  return config;
}

Status check_processor(const qwen3vl::VisionProcessorConfig& p, const qwen3vl::VisionConfig& v,
                       const std::string& text_encoder, const char* which) {
  if (p.patch_size != v.patch_size || p.temporal_patch_size != v.temporal_patch_size ||
      p.merge_size != v.spatial_merge_size)
    return invalid_argument(std::string("the ") + which + " processor cuts " + std::to_string(p.patch_size) +
                            " px patches (temporal " + std::to_string(p.temporal_patch_size) + ", merge " +
                            std::to_string(p.merge_size) + ") but the vision tower in " + text_encoder + " takes " +
                            std::to_string(v.patch_size) + " (temporal " + std::to_string(v.temporal_patch_size) +
                            ", merge " + std::to_string(v.spatial_merge_size) +
                            "): use the processor/ folder of the same release");
  return Status::ok();
}

}  // namespace

int64_t ConditionerInputs::vision_patches() const {
  int64_t n = 0;
  for (const qwen3vl::VisionInputs* v : {&images, &videos})
    for (const qwen3vl::GridThw& g : v->grids) n += g.t * g.h * g.w;
  return n;
}

Expected<qwen3vl::VisionProcessorConfig> image_processor_config(const std::string& model_dir) {
  return processor_config(model_dir, "preprocessor_config.json", qwen3vl::VisionProcessorConfig::h3_images());
}

Expected<qwen3vl::VisionProcessorConfig> video_processor_config(const std::string& model_dir) {
  return processor_config(model_dir, "video_preprocessor_config.json", qwen3vl::VisionProcessorConfig::h3_videos());
}

Status finish_conditioner_inputs(ConditionerInputs& inputs, int64_t max_tokens, const std::string& what) {
  const Presentation& p = inputs.presentation;
  if (p.size() > max_tokens)
    return invalid_argument(what + " is " + std::to_string(p.size()) +
                            " tokens (labels, the vision tokens, the prompt); the text encoder takes at most " +
                            std::to_string(max_tokens) + ": shorten the prompt or give fewer or smaller references");
  if (p.image_grids.size() != inputs.images.grids.size() || p.video_grids.size() != inputs.videos.grids.size())
    return Status(ErrorCode::kInternal, what + ": the presentation's vision blocks and the processed media differ");
  std::vector<int64_t> ids(p.token_ids.begin(), p.token_ids.end());
  inputs.token_ids = Tensor::from_ints(ids, {p.size()});  // i64 [L]
  OROCHI_ASSIGN_OR_RETURN(inputs.positions, qwen3vl::rope_index(p.kinds, p.image_grids, p.video_grids,
                                                                inputs.image_processor.merge_size));  // i64 [L, 3]
  return Status::ok();
}

Status check_processors_match_tower(const ConditionerInputs& inputs, const qwen3vl::VisionConfig& tower,
                                    const std::string& text_encoder) {
  if (!inputs.images.grids.empty())
    OROCHI_RETURN_IF_ERROR(check_processor(inputs.image_processor, tower, text_encoder, "image"));
  if (!inputs.videos.grids.empty())
    OROCHI_RETURN_IF_ERROR(check_processor(inputs.video_processor, tower, text_encoder, "video"));
  return Status::ok();
}

Expected<PromptConditioning> encode_conditioner_inputs_cpu(const std::string& text_encoder, int64_t layer,
                                                           const ConditionerInputs& inputs) {
  OROCHI_RETURN_IF_ERROR(check_text_encoder(text_encoder, layer));
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextWeights text, qwen3vl::load_text_weights(text_encoder, layer));
  qwen3vl::VisionEmbeddings vision;
  if (inputs.has_vision()) {
    OROCHI_ASSIGN_OR_RETURN(const qwen3vl::VisionWeights tower, qwen3vl::load_vision_weights(text_encoder));
    OROCHI_RETURN_IF_ERROR(check_processors_match_tower(inputs, tower.config, text_encoder));
    // Each modality through the tower on its own, as transformers does: f32 [tokens, out] and
    // DeepStack [tokens, out] each, the modality's tokens in sequence order.
    qwen3vl::VisionFeatures images, videos;
    if (!inputs.images.grids.empty()) {
      OROCHI_ASSIGN_OR_RETURN(images,
                              qwen3vl::run_vision_tower(tower, inputs.images.pixel_values, inputs.images.grids));
    }
    if (!inputs.videos.grids.empty()) {
      OROCHI_ASSIGN_OR_RETURN(videos,
                              qwen3vl::run_vision_tower(tower, inputs.videos.pixel_values, inputs.videos.grids));
    }
    OROCHI_ASSIGN_OR_RETURN(vision, qwen3vl::vision_embeddings(inputs.presentation.kinds, text.config.hidden_size,
                                                               images.features, images.deepstack, videos.features,
                                                               videos.deepstack));
  }
  PromptConditioning out;
  OROCHI_ASSIGN_OR_RETURN(out.features, qwen3vl::encode_mixed(text, inputs.token_ids, inputs.positions, vision));
  out.tags = inputs.presentation.dit_tags;
  out.token_ids = inputs.presentation.token_ids;
  return out;
}

}  // namespace orochi::pipeline
