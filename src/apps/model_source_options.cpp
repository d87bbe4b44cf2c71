#include "apps/model_source_options.h"

#include <cmath>
#include <cstdlib>

#include "models/h3/weights.h"

namespace orochi::apps {

void add_model_source_options(std::set<std::string>& valued, std::set<std::string>& flags,
                              std::set<std::string>& repeatable) {
  valued.insert({"transformer", "transformer-config", "qkv-order", "lora", "text-encoder", "vae", "audio-vae",
                 "tokenizer", "comfy-models"});
  flags.insert("random-weights");
  repeatable.insert("lora");
}

// FILE or FILE:STRENGTH; a suffix after the last ':' that is not a number belongs to the path.
Expected<engine::LoraSource> parse_lora_option(const std::string& value) {
  engine::LoraSource l{value, 1.0f};
  const size_t colon = value.rfind(':');
  if (colon != std::string::npos && colon + 1 < value.size()) {
    const std::string tail = value.substr(colon + 1);
    char* end = nullptr;
    const float s = std::strtof(tail.c_str(), &end);
    if (end == tail.c_str() + tail.size()) {
      if (!std::isfinite(s) || s < -16.0f || s > 16.0f)
        return usage_error("--lora " + value + ": strength must be a finite number in [-16, 16], got " + tail);
      l.path = value.substr(0, colon);
      l.strength = s;
    }
  }
  if (l.path.empty()) return usage_error("--lora takes FILE[:STRENGTH], got '" + value + "'");
  return l;
}

Expected<engine::ModelSource> parse_model_source(const Args& args, const std::string& command) {
  if (args.positionals().size() > 1)
    return usage_error(command + " takes at most one MODEL_DIR, got " + std::to_string(args.positionals().size()) +
                       " positional arguments");
  engine::ModelSource s;
  if (!args.positionals().empty()) s.dir = args.positionals()[0];
  s.random_weights = args.has("random-weights");
  if (args.has("transformer")) s.transformer_file = args.get("transformer", "");
  if (args.has("transformer-config")) s.transformer_config = args.get("transformer-config", "");
  s.qkv_order = args.get("qkv-order", "auto");
  if (Status st = h3::parse_qkv_order(s.qkv_order).status(); !st.is_ok()) return st;
  // Single parts and a ComfyUI models/ tree (engine/model_components.h checks the files).
  for (auto [name, part] : {std::pair{"text-encoder", &s.text_encoder}, std::pair{"vae", &s.vae},
                            std::pair{"audio-vae", &s.audio_vae}, std::pair{"tokenizer", &s.tokenizer},
                            std::pair{"comfy-models", &s.comfy_models}})
    if (args.has(name)) *part = args.get(name, "");
  if ((s.transformer_config || s.qkv_order != "auto") && !s.transformer_file && !s.comfy_models)
    return usage_error("--transformer-config and --qkv-order describe a --transformer FILE (or the one --comfy-models "
                       "finds)");
  if (s.dir && s.comfy_models)
    return usage_error("MODEL_DIR and --comfy-models are two model sources: pass one (--transformer, --text-encoder, "
                       "--vae, --audio-vae and --tokenizer replace single parts of either)");
  for (const std::string& v : args.get_all("lora")) {
    OROCHI_ASSIGN_OR_RETURN(engine::LoraSource lora, parse_lora_option(v));
    s.loras.push_back(std::move(lora));
  }
  return s;
}

}  // namespace orochi::apps
