#include "weights/lora_file.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>

#include "weights/safetensors.h"

namespace orochi::weights {
namespace {

enum class Part { kDown, kUp, kAlpha, kDiff, kDiffBias };

struct Suffix {
  const char* text;
  std::optional<LoraSuffixes> convention;  // none: .alpha, allowed in every convention
  Part part;
};

// Longest first, so ".lora_A.default.weight" is not read as ".weight" of something else.
constexpr Suffix kSuffixes[] = {
    {".lora_A.default.weight", LoraSuffixes::kPeftDefault, Part::kDown},
    {".lora_B.default.weight", LoraSuffixes::kPeftDefault, Part::kUp},
    {".lora_down.weight", LoraSuffixes::kKohya, Part::kDown},
    {".lora_up.weight", LoraSuffixes::kKohya, Part::kUp},
    {".lora_A.weight", LoraSuffixes::kPeft, Part::kDown},
    {".lora_B.weight", LoraSuffixes::kPeft, Part::kUp},
    {".alpha", std::nullopt, Part::kAlpha},
    {".diff", std::nullopt, Part::kDiff},
    {".diff_b", std::nullopt, Part::kDiffBias},
};

struct Partial {
  const TensorInfo* down = nullptr;
  const TensorInfo* up = nullptr;
  const TensorInfo* alpha = nullptr;
  const TensorInfo* diff = nullptr;
  const TensorInfo* diff_bias = nullptr;
};

// One PEFT LoraConfig of a `lora_adapter_metadata` entry: its keys are "PREFIX.FIELD" (diffusers'
// _pack_dict_with_prefix: "transformer.lora_alpha") or a bare "FIELD".
struct AdapterConfig {
  std::optional<float> lora_alpha;
  std::vector<std::pair<std::string, float>> alpha_pattern;  // in the file's order, as PEFT iterates it
  bool rslora = false;
};

Expected<float> positive_alpha(const nlohmann::ordered_json& v, const std::string& where) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    return invalid_argument(where + " is " + v.dump() + ", expected a positive number");
  return v.get<float>();
}

Expected<std::map<std::string, AdapterConfig>> adapter_configs(const std::string& text, const std::string& where) {
  const std::string entry = where + ": __metadata__ lora_adapter_metadata";
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return invalid_argument(entry + " is not a JSON object");
  std::map<std::string, AdapterConfig> out;  // prefix ("" for bare fields) -> config
  for (const auto& [key, value] : json.items()) {
    const size_t dot = key.rfind('.');
    const std::string prefix = dot == std::string::npos ? "" : key.substr(0, dot);
    const std::string field = key.substr(dot == std::string::npos ? 0 : dot + 1);
    AdapterConfig& c = out[prefix];
    if (field == "lora_alpha") {
      OROCHI_ASSIGN_OR_RETURN(c.lora_alpha, positive_alpha(value, entry + " '" + key + "'"));
    } else if (field == "alpha_pattern" && !value.is_null()) {
      if (!value.is_object()) return invalid_argument(entry + " '" + key + "' is not an object of pattern: alpha");
      for (const auto& [pattern, alpha] : value.items()) {
        OROCHI_ASSIGN_OR_RETURN(float a, positive_alpha(alpha, entry + " '" + key + "' '" + pattern + "'"));
        c.alpha_pattern.emplace_back(pattern, a);
      }
    } else if (field == "use_rslora") {
      c.rslora = value.is_boolean() && value.get<bool>();
    } else if (field == "use_dora" && value.is_boolean() && value.get<bool>()) {
      return invalid_argument(entry + " '" + key + "' is true: DoRA adapters (a magnitude vector per layer) are not supported");
    }
  }
  return out;
}

// PEFT's get_pattern_key: the first pattern that matches the whole module name or a dotted suffix of it.
Expected<std::optional<float>> pattern_alpha(const AdapterConfig& c, const std::string& module, const std::string& where) {
  for (const auto& [pattern, alpha] : c.alpha_pattern) {
    std::regex re;
    try {
      re = std::regex("(.*\\.)?(" + pattern + ")$", std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      return invalid_argument(where + ": __metadata__ lora_adapter_metadata alpha_pattern '" + pattern +
                              "' is not a regular expression");
    }
    if (std::regex_match(module, re)) return std::optional<float>(alpha);
  }
  return std::optional<float>();
}

// The alphas of the file's metadata for pairs that have no .alpha key (see the header for the order).
Status apply_metadata_alphas(std::vector<LoraPair>& pairs, const std::map<std::string, std::string>& metadata,
                             const std::string& where) {
  if (auto it = metadata.find("lora_adapter_metadata"); it != metadata.end()) {
    OROCHI_ASSIGN_OR_RETURN(const auto configs, adapter_configs(it->second, where));
    for (LoraPair& p : pairs) {
      // The longest prefix that the module name starts with ("" matches any).
      const AdapterConfig* config = nullptr;
      std::string inner;
      size_t best = 0;
      for (const auto& [prefix, c] : configs) {
        const bool fits = prefix.empty() || p.module.starts_with(prefix + ".");
        if (!fits || (config && prefix.size() < best)) continue;
        config = &c, best = prefix.size();
        inner = prefix.empty() ? p.module : p.module.substr(prefix.size() + 1);
      }
      if (!config) continue;
      OROCHI_ASSIGN_OR_RETURN(const std::optional<float> from_pattern, pattern_alpha(*config, inner, where));
      p.alpha = from_pattern ? from_pattern : config->lora_alpha;
      p.rslora = config->rslora;
    }
    return Status::ok();
  }
  if (auto it = metadata.find("alpha"); it != metadata.end()) {
    char* end = nullptr;
    const float v = std::strtof(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || !std::isfinite(v) || v <= 0)
      return invalid_argument(where + ": __metadata__ \"alpha\" is \"" + it->second +
                              "\", expected a positive number (the network alpha of every module)");
    for (LoraPair& p : pairs) p.alpha = v;
  }
  return Status::ok();
}

}  // namespace

float LoraPair::scale() const {
  if (!alpha) return 1.0f;
  return *alpha / (rslora ? std::sqrt(static_cast<float>(rank())) : static_cast<float>(rank()));
}

const char* lora_suffixes_name(LoraSuffixes s) {
  switch (s) {
    case LoraSuffixes::kPeft: return "PEFT (lora_A/lora_B)";
    case LoraSuffixes::kPeftDefault: return "PEFT with adapter 'default' (lora_A.default/lora_B.default, DiffSynth)";
    case LoraSuffixes::kKohya: return "kohya (lora_down/lora_up)";
  }
  return "?";
}

Expected<LoraFile> read_lora_file(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> file, SafetensorsFile::open(path));
  const std::string where = "LoRA '" + path + "'";
  if (file->tensors().empty()) return invalid_argument(where + " holds no tensors");
  std::optional<LoraSuffixes> convention;
  std::string convention_key;
  std::map<std::string, Partial> modules;
  for (const TensorInfo& info : file->tensors()) {
    const Suffix* found = nullptr;
    for (const Suffix& s : kSuffixes)
      if (info.name.ends_with(s.text) && info.name.size() > std::string_view(s.text).size()) {
        found = &s;
        break;
      }
    if (!found)
      return invalid_argument(where + ": key '" + info.name +
                              "' is not a LoRA factor: expected MODULE.lora_A.weight / lora_B.weight (PEFT, diffusers), "
                              ".lora_A.default.weight / .lora_B.default.weight (DiffSynth), .lora_down.weight / "
                              ".lora_up.weight (kohya, musubi), .alpha, or a full-rank .diff / .diff_b (ComfyUI)");
    if (found->convention) {
      if (convention && *convention != *found->convention)
        return invalid_argument(where + " mixes two key conventions: '" + convention_key + "' is " +
                                lora_suffixes_name(*convention) + ", '" + info.name + "' is " +
                                lora_suffixes_name(*found->convention));
      convention = found->convention;
      convention_key = info.name;
    }
    Partial& m = modules[info.name.substr(0, info.name.size() - std::string_view(found->text).size())];
    switch (found->part) {
      case Part::kDown: m.down = &info; break;
      case Part::kUp: m.up = &info; break;
      case Part::kAlpha: m.alpha = &info; break;
      case Part::kDiff: m.diff = &info; break;
      case Part::kDiffBias: m.diff_bias = &info; break;
    }
  }
  bool any_diff = false;
  for (const auto& [module, m] : modules) any_diff |= m.diff || m.diff_bias;
  if (!convention && !any_diff) return invalid_argument(where + " holds only .alpha keys, no LoRA factors");

  LoraFile out;
  out.path = path;
  out.suffixes = convention.value_or(LoraSuffixes::kPeft);  // a file of .diff keys alone: names decide
  for (const auto& [module, m] : modules) {
    for (const TensorInfo* info : {m.diff, m.diff_bias}) {
      if (!info) continue;
      const Tensor t = file->tensor(*info);
      const bool bias = info == m.diff_bias;
      if (!dtype_is_float(t.dtype())) return invalid_argument(where + ": '" + info->name + "' is " + dtype_name(t.dtype()) + ", expected a float type");
      if (t.numel() == 0 || t.ndim() < 1 || t.ndim() > (bias ? 1 : 2))
        return shape_mismatch(where + ": '" + info->name + "' has shape " + shape_to_string(t.shape()) + ", expected " +
                              (bias ? "a bias delta [out]" : "a weight delta [out, in] (or [size] for a norm)"));
      out.diffs.push_back(LoraDiff{module, info->name, t, bias});
    }
    if (!m.down && !m.up && !m.alpha) continue;  // a module with only full-rank deltas
    if (!m.down || !m.up) {
      const TensorInfo* have = m.down ? m.down : m.up ? m.up : m.alpha;
      return invalid_argument(where + ": '" + have->name + "' has no " + (m.down ? "up (B)" : "down (A)") +
                              " factor beside it for module '" + module + "'");
    }
    LoraPair p;
    p.module = module;
    p.down_key = m.down->name;
    p.up_key = m.up->name;
    p.down = file->tensor(*m.down);
    p.up = file->tensor(*m.up);
    for (const auto& [key, t] : {std::pair{p.down_key, p.down}, std::pair{p.up_key, p.up}}) {
      if (!dtype_is_float(t.dtype())) return invalid_argument(where + ": '" + key + "' is " + dtype_name(t.dtype()) + ", expected a float type");
      if (t.ndim() != 2 || t.numel() == 0)
        return shape_mismatch(where + ": '" + key + "' has shape " + shape_to_string(t.shape()) +
                              ", expected a non-empty 2-D factor ([rank, in] for A, [out, rank] for B)");
    }
    if (p.up.dim(1) != p.down.dim(0))
      return shape_mismatch(where + ": the ranks of '" + p.down_key + "' " + shape_to_string(p.down.shape()) + " and '" +
                            p.up_key + "' " + shape_to_string(p.up.shape()) +
                            " differ (A is [rank, in], B is [out, rank])");
    if (m.alpha) {
      const Tensor a = file->tensor(*m.alpha);
      if (!dtype_is_float(a.dtype()) || a.numel() != 1)
        return invalid_argument(where + ": '" + m.alpha->name + "' is " + a.describe() + ", expected one float");
      const float v = a.to(DType::kF32).data<float>()[0];
      if (!std::isfinite(v) || v <= 0)
        return invalid_argument(where + ": '" + m.alpha->name + "' is " + std::to_string(v) + ", expected a positive alpha");
      p.alpha = v;
    }
    out.pairs.push_back(std::move(p));
  }
  bool any_alpha_key = false;
  for (const LoraPair& p : out.pairs) any_alpha_key |= p.alpha.has_value();
  if (!any_alpha_key) OROCHI_RETURN_IF_ERROR(apply_metadata_alphas(out.pairs, file->metadata(), where));
  return out;
}

}  // namespace orochi::weights
