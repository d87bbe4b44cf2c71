#include "engine/model_family.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/h3/model_folder_parts.h"

namespace orochi::engine {
namespace {

// The `_class_name` of a diffusers config.json, or "" when there is none or it is unreadable.
std::string class_name_of(const std::string& config_path) {
  std::ifstream f(config_path);
  if (!f) return "";
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  const auto it = j.find("_class_name");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// MiniMax-H3 (MODELS_H3.md): a diffusers pipeline folder whose transformer is
// MiniMaxH3Transformer3DModel (or the original release's transformer folder of the same config), or
// the original release's FL2VA/ + Ref2VA/ (h3::model_folder_parts).
class H3Family final : public ModelFamily {
 public:
  std::string name() const override { return "MiniMax-H3"; }
  bool detect(const std::string& dir) const override {
    // The original release's root, FL2VA/ or Ref2VA/ (told by their model_index.json).
    if (Expected<h3::FolderParts> parts = h3::model_folder_parts(dir); parts && parts->release()) return true;
    const std::string cls = class_name_of(dir + "/transformer/config.json");
    return cls == "MiniMaxH3Transformer3DModel" ||
           (cls.empty() && std::filesystem::exists(dir + "/transformer/config.json") &&
            std::filesystem::exists(dir + "/audio_vae"));
  }
  std::vector<FamilyComponent> components() const override {
    return {{"transformer", "the 33 B denoiser (t2va, fl2va)", true},
            {"vae", "the video VAE", true},
            {"audio_vae", "the audio VAE", true},
            {"tokenizer", "the Qwen tokenizer (for --prompt)", false},
            {"text_encoder", "Qwen3-VL-32B, the conditioner (for --prompt)", false},
            {"transformer_ref", "the ref2va denoiser", false}};
  }
  std::vector<FamilyWorkflow> workflows() const override {
    return {{"t2va", "text to video with audio", true},
            {"fl2va", "first and/or last keyframe to video with audio", true},
            {"ref2va", "character images, a reference video with its sound and audio clips to video with audio", true}};
  }
  std::vector<std::string> phases() const override { return {"text encoder", "denoiser", "decode"}; }
};

}  // namespace

const std::vector<const ModelFamily*>& model_families() {
  static const H3Family h3;
  static const std::vector<const ModelFamily*> families = {&h3};
  return families;
}

Expected<const ModelFamily*> detect_family(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    return not_found(dir + " is not a folder: pass a diffusers-layout model folder (transformer/, vae/, audio_vae/, "
                           "...), or no folder for the built-in demo model");
  for (const ModelFamily* f : model_families())
    if (f->detect(dir)) return f;
  std::string known;
  for (const ModelFamily* f : model_families()) known += (known.empty() ? "" : ", ") + f->name();
  std::string looks = class_name_of(dir + "/model_index.json");
  if (looks.empty()) looks = class_name_of(dir + "/transformer/config.json");
  return unsupported(dir + " holds no model Orochi knows" + (looks.empty() ? "" : " (it says " + looks + ")") +
                     "; the families this build runs: " + known +
                     " (a diffusers-layout folder whose transformer/config.json names MiniMaxH3Transformer3DModel)");
}

Status check_workflow(const ModelFamily& family, const std::string& workflow) {
  for (const FamilyWorkflow& w : family.workflows()) {
    if (w.name != workflow) continue;
    if (w.built) return Status::ok();
    return unsupported(family.name() + "'s " + workflow + " (" + w.about + ") is not built yet; t2va is");
  }
  std::string names;
  for (const FamilyWorkflow& w : family.workflows()) names += (names.empty() ? "" : ", ") + w.name;
  return invalid_argument(family.name() + " has no workflow '" + workflow + "'; it has " + names);
}

}  // namespace orochi::engine
