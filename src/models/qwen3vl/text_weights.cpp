#include "models/qwen3vl/text_weights.h"

#include <algorithm>
#include <cstdlib>

#include "core/log.h"
#include "weights/checked_reader.h"
#include "weights/component_source.h"
#include "weights/model_folder.h"

namespace orochi::qwen3vl {
namespace {

// Tried in order; the first under which "embed_tokens.weight" exists wins.
constexpr const char* kPrefixes[] = {"model.language_model.", "language_model.", "model.", ""};

Expected<std::string> detect_prefix(const weights::Checkpoint& ckpt) {
  for (const char* p : kPrefixes)
    if (ckpt.contains(std::string(p) + "embed_tokens.weight")) return std::string(p);
  std::string sample;
  const auto names = ckpt.names();
  for (size_t i = 0; i < names.size() && i < 5; ++i) sample += (i ? ", " : "") + names[i];
  return invalid_argument("'" + ckpt.path() +
                          "' is not a Qwen3-VL text checkpoint: no model.language_model.embed_tokens.weight "
                          "(nor language_model., model. or no prefix); its keys begin " +
                          (sample.empty() ? std::string("(none)") : sample));
}

// The layer index of "layers.{i}.…", or -1.
int64_t layer_index(const std::string& rest) {
  if (!rest.starts_with("layers.")) return -1;
  char* end = nullptr;
  const char* digits = rest.c_str() + 7;
  const long long i = std::strtoll(digits, &end, 10);
  if (end == digits || *end != '.') return -1;
  return i;
}

// Keys under the language model's prefix that this load deliberately skips: the final norm, the
// non-persistent rotary buffer some exports carry, and existing layers past the stop. Keys of other
// components (vision tower, LM head) lie outside the prefix and are skipped before this.
bool skipped_on_purpose(const std::string& rest, const TextConfig& c, int64_t stop) {
  if (rest.starts_with("norm.") || rest.starts_with("rotary_emb.")) return true;
  const int64_t i = layer_index(rest);
  return i >= stop && i < c.num_hidden_layers;
}

Status check_keys(const weights::Checkpoint& ckpt, const std::string& prefix, const TextConfig& c,
                  int64_t stop, const std::vector<std::string>& expected) {
  std::vector<std::string> present;
  for (const std::string& name : ckpt.names()) {
    if (!name.starts_with(prefix)) continue;
    // With an empty prefix the other components would be "under" it; keep them out by name.
    if (prefix.empty() &&
        (name.starts_with("model.") || name.starts_with("lm_head.") || name.starts_with("visual.")))
      continue;
    if (!skipped_on_purpose(name.substr(prefix.size()), c, stop)) present.push_back(name);
  }
  return weights::check_key_set(present, expected, "Qwen3-VL text checkpoint '" + ckpt.path() + "'");
}

// The checked reader (weights/checked_reader.h) of the text decoder.
class Reader : public weights::CheckedReader {
 public:
  Reader(const weights::Checkpoint& ckpt, const std::string& prefix, std::vector<std::string>& loaded)
      : CheckedReader(ckpt, prefix, "this config.json", "the text decoder", loaded) {}
};

std::string layer_name(int64_t i, const char* rest) { return "layers." + std::to_string(i) + "." + rest; }

}  // namespace

std::vector<std::string> text_weight_keys(const std::string& prefix, int64_t stop_after_layers) {
  static constexpr const char* kLayerParams[] = {"input_layernorm.weight",  "self_attn.q_proj.weight",
                                                 "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                                 "self_attn.q_norm.weight", "self_attn.k_norm.weight",
                                                 "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                                                 "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                                                 "mlp.down_proj.weight"};
  std::vector<std::string> keys{prefix + "embed_tokens.weight"};
  for (int64_t i = 0; i < stop_after_layers; ++i)
    for (const char* p : kLayerParams) keys.push_back(prefix + layer_name(i, p));
  return keys;
}

Expected<TextWeights> load_text_weights(const weights::Checkpoint& ckpt, const TextConfig& c, int64_t stop) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  if (stop < 0 || stop > c.num_hidden_layers)
    return invalid_argument("stop_after_layers " + std::to_string(stop) + " is outside [0, " +
                            std::to_string(c.num_hidden_layers) + "] (the decoder has " +
                            std::to_string(c.num_hidden_layers) + " layers)");
  OROCHI_ASSIGN_OR_RETURN(std::string prefix, detect_prefix(ckpt));
  OROCHI_RETURN_IF_ERROR(check_keys(ckpt, prefix, c, stop, text_weight_keys(prefix, stop)));

  TextWeights w;
  w.config = c;
  w.prefix = prefix;
  Reader r(ckpt, w.prefix, w.loaded_keys);
  const int64_t H = c.hidden_size, D = c.head_dim, I = c.intermediate_size;
  w.embed_tokens = r.take("embed_tokens.weight", {c.vocab_size, H});
  for (int64_t i = 0; i < stop && r.status().is_ok(); ++i) {
    // Same order as text_weight_keys().
    TextLayerWeights l;
    l.input_layernorm = r.take(layer_name(i, "input_layernorm.weight"), {H});
    l.q_proj = r.take(layer_name(i, "self_attn.q_proj.weight"), {c.q_dim(), H});
    l.k_proj = r.take(layer_name(i, "self_attn.k_proj.weight"), {c.kv_dim(), H});
    l.v_proj = r.take(layer_name(i, "self_attn.v_proj.weight"), {c.kv_dim(), H});
    l.q_norm = r.take(layer_name(i, "self_attn.q_norm.weight"), {D});
    l.k_norm = r.take(layer_name(i, "self_attn.k_norm.weight"), {D});
    l.o_proj = r.take(layer_name(i, "self_attn.o_proj.weight"), {H, c.q_dim()});
    l.post_attention_layernorm = r.take(layer_name(i, "post_attention_layernorm.weight"), {H});
    l.gate_proj = r.take(layer_name(i, "mlp.gate_proj.weight"), {I, H});
    l.up_proj = r.take(layer_name(i, "mlp.up_proj.weight"), {I, H});
    l.down_proj = r.take(layer_name(i, "mlp.down_proj.weight"), {H, I});
    w.layers.push_back(std::move(l));
  }
  if (!r.status().is_ok()) return r.status();
  return w;
}

Expected<TextComponent> text_encoder_component(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const weights::ComponentConfig found, weights::component_config(path, "--text-encoder"));
  TextComponent c;
  c.single_file = found.single_file;
  if (found.config) {
    Expected<TextConfig> config = TextConfig::from_json(*found.config);
    if (!config) return config.status().with_context(found.from);
    c.config = std::move(config).value();
    c.config_from = found.from;
  } else {
    c.config = TextConfig::qwen3vl_32b();
    c.config_from = "the released Qwen3-VL-32B config";
  }
  c.file_layers = c.config.num_hidden_layers;
  if (c.single_file) {
    // Layers 0 .. n-1 under the file's prefix (ComfyUI's file stops after the conditioning layer).
    OROCHI_ASSIGN_OR_RETURN(const weights::Checkpoint ckpt, weights::Checkpoint::open(path));
    OROCHI_ASSIGN_OR_RETURN(const std::string prefix, detect_prefix(ckpt));
    int64_t n = 0;
    while (ckpt.contains(prefix + layer_name(n, "input_layernorm.weight"))) ++n;
    c.file_layers = std::min(n, c.config.num_hidden_layers);
  }
  return c;
}

Expected<TextWeights> load_text_weights(const std::string& path, int64_t stop_after_layers) {
  OROCHI_ASSIGN_OR_RETURN(const TextComponent component, text_encoder_component(path));
  OROCHI_ASSIGN_OR_RETURN(const weights::Checkpoint ckpt, weights::Checkpoint::open(path));
  Expected<TextWeights> w = load_text_weights(ckpt, component.config, stop_after_layers);
  if (!w) return w.status().with_context("text encoder config from " + component.config_from);
  log_debug("Qwen3-VL text: ", w->loaded_keys.size(), " tensors of ", ckpt.size(), " read from ", path,
            " (prefix '", w->prefix, "', layers 0..", stop_after_layers - 1, ", config from ", component.config_from,
            ")");
  return w;
}

void emulate_quantization(TextWeights& weights, Precision precision) {
  weights.emulated_codes = precision == Precision::kBf16 ? DType::kF32 : precision_weight_dtype(precision);
}

}  // namespace orochi::qwen3vl
