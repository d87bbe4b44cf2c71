#include "pipeline/prompt_features.h"

#include <nlohmann/json.hpp>

#include "models/qwen3vl/text_model.h"
#include "text/tokenizer.h"
#include "weights/model_folder.h"

namespace orochi::pipeline {

Expected<Tensor> tokenize_prompt(const std::string& tokenizer_path, const std::string& prompt, int64_t max_tokens) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  OROCHI_ASSIGN_OR_RETURN(const text::BpeTokenizer tokenizer, text::BpeTokenizer::load(tokenizer_path));
  OROCHI_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, tokenizer.encode(prompt, static_cast<size_t>(max_tokens)));
  if (ids.empty()) return invalid_argument("the prompt tokenizes to nothing");
  Tensor out = Tensor::empty({static_cast<int64_t>(ids.size())}, DType::kI64);
  for (size_t i = 0; i < ids.size(); ++i) out.data<int64_t>()[i] = ids[i];
  return out;
}

Status check_text_encoder(const std::string& path, int64_t layer, int64_t* max_tokens, int64_t* hidden_size) {
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextComponent text, qwen3vl::text_encoder_component(path));
  const qwen3vl::TextConfig& config = text.config;
  if (layer < 1 || layer >= config.num_hidden_layers)
    return invalid_argument("the text encoder in " + path + " has " + std::to_string(config.num_hidden_layers) +
                            " layers (config from " + text.config_from + "); the conditioning reads the residual "
                            "after layer " + std::to_string(layer) + ", which must be below that (--text-layer)");
  if (layer > text.file_layers)
    return invalid_argument(path + " holds " + std::to_string(text.file_layers) + " decoder layers; the conditioning "
                            "reads the residual after layer " + std::to_string(layer) + " (--text-layer)");
  if (max_tokens) *max_tokens = config.max_position_embeddings;
  if (hidden_size) *hidden_size = config.hidden_size;
  return Status::ok();
}

Expected<Tensor> encode_prompt_cpu(const std::string& dir, const Tensor& token_ids, int64_t layer) {
  OROCHI_RETURN_IF_ERROR(check_text_encoder(dir, layer));
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextWeights weights, qwen3vl::load_text_weights(dir, layer));
  return qwen3vl::encode_text(weights, token_ids);
}

}  // namespace orochi::pipeline
