#include "models/qwen3vl/text_config.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/log.h"

namespace orochi::qwen3vl {
namespace {

Status read_int(const nlohmann::json& j, const char* key, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number_integer())
    return invalid_argument(std::string("config.json: text_config '") + key + "' must be an integer");
  out = it->get<int64_t>();
  return Status::ok();
}

Status read_number(const nlohmann::json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number())
    return invalid_argument(std::string("config.json: text_config '") + key + "' must be a number");
  out = it->get<double>();
  return Status::ok();
}

Status read_bool(const nlohmann::json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean())
    return invalid_argument(std::string("config.json: '") + key + "' must be true or false");
  out = it->get<bool>();
  return Status::ok();
}

// Finds the text fields: nested under "text_config" (Qwen3VLConfig) or at the top (Qwen3VLTextConfig).
Expected<const nlohmann::json*> text_fields(const nlohmann::json& j) {
  const std::string model_type =
      j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (model_type == "qwen3_vl_text") return &j;
  if (!model_type.empty() && model_type != "qwen3_vl")
    return invalid_argument("config.json describes a '" + model_type +
                            "' model, not Qwen3-VL (qwen3_vl): point at the text_encoder/ folder");
  auto it = j.find("text_config");
  if (it == j.end() || !it->is_object())
    return invalid_argument(
        "config.json has no \"text_config\" object; a Qwen3VLConfig nests the text "
        "decoder's fields there");
  return &*it;
}

// transformers folds the legacy "rope_scaling" (preferred when both are present) and "rope_theta"
// into "rope_parameters".
Status read_rope(const nlohmann::json& t, TextConfig& c) {
  const nlohmann::json* rope = nullptr;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = t.find(key);
    if (it != t.end() && !it->is_null()) {
      if (!it->is_object())
        return invalid_argument(std::string("config.json: '") + key + "' must be an object");
      if (!it->empty()) {
        rope = &*it;
        break;
      }
    }
  }
  OROCHI_RETURN_IF_ERROR(read_number(t, "rope_theta", c.rope_theta));
  if (!rope) return Status::ok();
  OROCHI_RETURN_IF_ERROR(read_number(*rope, "rope_theta", c.rope_theta));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    auto it = rope->find(key);
    if (it != rope->end() && it->is_string()) {
      type = it->get<std::string>();
      break;
    }
  }
  if (type != "default")
    return unsupported("config.json: rope_type '" + type + "' is not supported (Qwen3-VL uses \"default\")");
  if (auto it = rope->find("mrope_section"); it != rope->end() && !it->is_null()) {
    if (!it->is_array() || it->size() != 3)
      return invalid_argument("config.json: 'mrope_section' must list 3 integers (t, h, w)");
    for (size_t i = 0; i < 3; ++i) {
      if (!(*it)[i].is_number_integer() || (*it)[i].get<int64_t>() < 0)
        return invalid_argument("config.json: 'mrope_section' must hold non-negative integers");
      c.mrope_section[i] = (*it)[i].get<int64_t>();
    }
  }
  return read_bool(*rope, "mrope_interleaved", c.mrope_interleaved);
}

}  // namespace

Expected<TextConfig> TextConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("config.json must hold a JSON object");
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json* t, text_fields(j));
  TextConfig c;
  OROCHI_RETURN_IF_ERROR(read_int(*t, "vocab_size", c.vocab_size));
  OROCHI_RETURN_IF_ERROR(read_int(*t, "max_position_embeddings", c.max_position_embeddings));
  OROCHI_RETURN_IF_ERROR(read_int(*t, "hidden_size", c.hidden_size));
  OROCHI_RETURN_IF_ERROR(read_int(*t, "intermediate_size", c.intermediate_size));
  OROCHI_RETURN_IF_ERROR(read_int(*t, "num_hidden_layers", c.num_hidden_layers));
  OROCHI_RETURN_IF_ERROR(read_int(*t, "num_attention_heads", c.num_attention_heads));
  OROCHI_RETURN_IF_ERROR(read_int(*t, "num_key_value_heads", c.num_key_value_heads));
  if (auto it = t->find("num_key_value_heads"); it == t->end() || it->is_null())
    c.num_key_value_heads = c.num_attention_heads;  // Qwen3VLTextConfig.__post_init__ does the same
  OROCHI_RETURN_IF_ERROR(read_int(*t, "head_dim", c.head_dim));
  OROCHI_RETURN_IF_ERROR(read_number(*t, "rms_norm_eps", c.rms_norm_eps));
  OROCHI_RETURN_IF_ERROR(read_rope(*t, c));
  OROCHI_RETURN_IF_ERROR(read_bool(j, "tie_word_embeddings", c.tie_word_embeddings));

  if (auto it = t->find("hidden_act");
      it != t->end() && !it->is_null() && !(it->is_string() && *it == "silu"))
    return unsupported("config.json: hidden_act " + it->dump() +
                       " is not supported (Qwen3-VL uses \"silu\")");
  if (auto it = t->find("attention_bias");
      it != t->end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>()))
    return unsupported("config.json: attention_bias " + it->dump() +
                       " is not supported (Qwen3-VL's projections have no biases)");
  if (!c.mrope_interleaved)
    log_warn(
        "config.json sets mrope_interleaved false; Qwen3-VL (and transformers) interleave the "
        "rotary sections regardless, and so does Orochi");
  OROCHI_RETURN_IF_ERROR(c.validate().with_context("config.json"));
  return c;
}

Status TextConfig::validate() const {
  const int64_t sizes[] = {vocab_size,          hidden_size,         intermediate_size, num_hidden_layers,
                           num_attention_heads, num_key_value_heads, head_dim};
  for (int64_t v : sizes)
    if (v <= 0 || v > (int64_t{1} << 24))
      return invalid_argument("every size must be a positive integer below 2^24, got " + std::to_string(v));
  if (head_dim % 2 != 0) return invalid_argument("head_dim must be even for rotate-half RoPE");
  if (num_attention_heads % num_key_value_heads != 0)
    return invalid_argument("num_attention_heads (" + std::to_string(num_attention_heads) +
                            ") must be a multiple of num_key_value_heads (" +
                            std::to_string(num_key_value_heads) + ")");
  if (!(rms_norm_eps > 0) || !(rope_theta > 0))
    return invalid_argument("rms_norm_eps and rope_theta must be positive");
  for (int64_t s : mrope_section)
    if (s < 0) return invalid_argument("mrope_section entries must be non-negative");
  return Status::ok();
}

std::string TextConfig::summary() const {
  std::ostringstream os;
  os << "  decoder layers " << num_hidden_layers << ", hidden " << hidden_size << ", heads "
     << num_attention_heads << " q / " << num_key_value_heads << " kv x " << head_dim << ", SwiGLU "
     << intermediate_size << ", vocab " << vocab_size << "\n"
     << "  RMSNorm eps " << rms_norm_eps << ", M-RoPE theta " << rope_theta << " sections ["
     << mrope_section[0] << ", " << mrope_section[1] << ", " << mrope_section[2] << "] interleaved\n";
  return os.str();
}

TextConfig TextConfig::qwen3vl_32b() {
  TextConfig c;
  c.vocab_size = 151936;
  c.hidden_size = 5120;
  c.intermediate_size = 25600;
  c.num_hidden_layers = 64;
  c.num_attention_heads = 64;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 5000000.0;
  c.mrope_section = {24, 20, 20};
  c.tie_word_embeddings = false;
  return c;
}

}  // namespace orochi::qwen3vl
