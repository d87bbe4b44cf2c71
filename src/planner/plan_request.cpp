#include "planner/plan_request.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "models/h3/model_folder_parts.h"
#include "models/h3/summary.h"
#include "models/h3_audio_vae/release_folder.h"
#include "models/h3_video_vae/release_folder.h"
#include "weights/checkpoint.h"
#include "weights/model_folder.h"

namespace orochi::planner {
namespace {

namespace fs = std::filesystem;

// Reads <folder>/config.json; only the file, never the weights next to it.
Expected<nlohmann::json> read_component_config(const std::string& folder) {
  Expected<nlohmann::json> config = weights::read_model_config(folder);
  if (!config && config.status().code() == ErrorCode::kNotFound)
    return not_found((fs::path(folder) / "config.json").string() + " not found: --model needs a MiniMax-H3 folder, " +
                     "diffusers layout (transformer/, vae/, audio_vae/ and text_encoder/ config.json files) or the " +
                     "original release's (FL2VA/, Ref2VA/), or --model h3 for the released configs");
  return config;
}

}  // namespace

Expected<ModelConfigs> load_model_configs(const std::string& model) {
  ModelConfigs m;
  if (model == "h3") return m;
  std::error_code ec;
  if (!fs::is_directory(model, ec))
    return not_found(model + ": no such folder; pass a diffusers-layout MiniMax-H3 folder, the original release's "
                             "(FL2VA/ and Ref2VA/, or either), or 'h3'");
  m.source = model;
  // Either layout (h3::model_folder_parts); the release's configs name their fields their own way
  // (MiniMaxH3DiTModel's, the video VAE's wrapper + source/, the audio VAE's metadata.json), read
  // into the same configs.
  OROCHI_ASSIGN_OR_RETURN(const h3::FolderParts parts, h3::model_folder_parts(model));
  const std::string transformer = parts.opening_folder();
  OROCHI_ASSIGN_OR_RETURN(nlohmann::json t, read_component_config(transformer));
  OROCHI_ASSIGN_OR_RETURN(m.transformer, h3::H3Config::from_json(t));
  if (h3vae::is_release_vae_folder(parts.vae)) {
    OROCHI_ASSIGN_OR_RETURN(const h3vae::ReleaseVaeFolder vae, h3vae::read_release_vae_folder(parts.vae));
    Expected<h3vae::VideoVaeConfig> config = h3vae::VideoVaeConfig::from_json(vae.config);
    if (!config) return config.status().with_context(vae.from);
    m.video_vae = std::move(config).value();
  } else {
    OROCHI_ASSIGN_OR_RETURN(nlohmann::json v, read_component_config(parts.vae));
    OROCHI_ASSIGN_OR_RETURN(m.video_vae, h3vae::VideoVaeConfig::from_json(v));
  }
  if (h3_audio::is_release_audio_vae_folder(parts.audio_vae)) {
    OROCHI_ASSIGN_OR_RETURN(const h3_audio::ReleaseAudioVaeFolder vae,
                            h3_audio::read_release_audio_vae_folder(parts.audio_vae));
    Expected<h3_audio::AudioVaeConfig> config = h3_audio::AudioVaeConfig::from_json(vae.config);
    if (!config) return config.status().with_context(vae.from);
    m.audio_vae = std::move(config).value();
  } else {
    OROCHI_ASSIGN_OR_RETURN(nlohmann::json a, read_component_config(parts.audio_vae));
    OROCHI_ASSIGN_OR_RETURN(m.audio_vae, h3_audio::AudioVaeConfig::from_json(a));
  }
  OROCHI_ASSIGN_OR_RETURN(nlohmann::json q, read_component_config(parts.text_encoder));
  OROCHI_ASSIGN_OR_RETURN(m.text_encoder, qwen3vl::TextConfig::from_json(q));
  if (q.contains("vision_config")) {
    OROCHI_ASSIGN_OR_RETURN(m.vision, qwen3vl::VisionConfig::from_json(q));
  }
  // A smaller test model conditions on its last hidden state when it has fewer than 50 layers.
  m.text_layers = std::min<int64_t>(50, m.text_encoder.num_hidden_layers);
  // The transformer's stored bytes, from its headers (a folder of configs alone has none).
  if (Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(transformer))
    m.transformer_host_bytes = h3::host_bytes_as_loaded(*ckpt).total();
  return m;
}

std::string ParallelLayout::name() const {
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kTensor: return "tp" + std::to_string(degree);
    case Kind::kSequence: return "sp" + std::to_string(degree);
    case Kind::kTensorSequence: return "tp" + std::to_string(tp()) + "xsp" + std::to_string(sp());
  }
  return "?";
}

int ParallelLayout::tp() const {
  switch (kind) {
    case Kind::kTensor: return degree;
    case Kind::kTensorSequence: return degree / sp_degree;
    default: return 1;
  }
}

int ParallelLayout::sp() const {
  switch (kind) {
    case Kind::kSequence: return degree;
    case Kind::kTensorSequence: return sp_degree;
    default: return 1;
  }
}

Expected<ParallelLayout> parse_parallel_layout(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '=') s += static_cast<char>(std::tolower(c));
  if (s == "none" || s == "1" || s.empty()) return ParallelLayout{};
  auto bad = [&] {
    return invalid_argument("--parallel must be auto, none, tpN (tensor parallel, e.g. tp2), spN (Ulysses sequence "
                            "parallel, e.g. sp2) or tpNxspM (both, e.g. tp2xsp2), got '" + text + "'");
  };
  // tpNxspM: TP inside SP.
  const size_t x = s.find("sp", 2);
  if (s.compare(0, 2, "tp") == 0 && x != std::string::npos) {
    const std::string tp_digits = s.substr(2, x - 2 - (s[x - 1] == 'x' ? 1 : 0)), sp_digits = s.substr(x + 2);
    for (const std::string* d : {&tp_digits, &sp_digits})
      if (d->empty() || d->size() > 3 || !std::all_of(d->begin(), d->end(), ::isdigit)) return bad();
    const int tp = std::stoi(tp_digits), sp = std::stoi(sp_digits);
    if (tp < 1 || sp < 1) return bad();
    if (tp == 1 || sp == 1) return parse_parallel_layout(tp == 1 ? "sp" + sp_digits : "tp" + tp_digits);
    return ParallelLayout{ParallelLayout::Kind::kTensorSequence, tp * sp, sp};
  }
  if (s.size() < 3 || (s.compare(0, 2, "tp") != 0 && s.compare(0, 2, "sp") != 0)) return bad();
  const std::string digits = s.substr(2);
  if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return bad();
  ParallelLayout p;
  p.kind = s[0] == 't' ? ParallelLayout::Kind::kTensor : ParallelLayout::Kind::kSequence;
  p.degree = std::stoi(digits);
  if (p.degree < 1) return bad();
  if (p.degree == 1) p.kind = ParallelLayout::Kind::kNone;
  return p;
}

Expected<std::optional<ParallelLayout>> parse_parallel_choice(const std::string& text) {
  if (text == "auto") return std::optional<ParallelLayout>();
  OROCHI_ASSIGN_OR_RETURN(const ParallelLayout layout, parse_parallel_layout(text));
  return std::optional<ParallelLayout>(layout);
}

Expected<PlanRequest> request_for_resolution(const std::string& res, PlanRequest base) {
  if (res == "480p") base.width = 832, base.height = 480;
  else if (res == "544p") base.width = 960, base.height = 544;
  else if (res == "768p") base.width = 1344, base.height = 768;
  else {
    const size_t x = res.find('x');
    const auto numeric = [](const std::string& d) {
      return !d.empty() && d.size() <= 5 && std::all_of(d.begin(), d.end(), ::isdigit);
    };
    if (x == std::string::npos || !numeric(res.substr(0, x)) || !numeric(res.substr(x + 1)))
      return invalid_argument("--res must be 480p, 544p, 768p or WxH in pixels (e.g. 1024x576), got '" + res + "'");
    base.width = std::stoll(res.substr(0, x));
    base.height = std::stoll(res.substr(x + 1));
  }
  return base;
}

}  // namespace orochi::planner
