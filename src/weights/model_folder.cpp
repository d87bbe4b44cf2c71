#include "weights/model_folder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "weights/mapped_file.h"

namespace orochi::weights {
namespace {

namespace fs = std::filesystem;

// "2 unknown keys ('a', 'b')" with at most `limit` names shown.
std::string describe_keys(const std::vector<std::string>& keys, const char* kind, size_t limit) {
  std::string out = std::to_string(keys.size()) + " " + kind + (keys.size() == 1 ? " key (" : " keys (");
  for (size_t i = 0; i < keys.size() && i < limit; ++i) out += (i ? ", " : "") + keys[i];
  if (keys.size() > limit) out += ", ... " + std::to_string(keys.size() - limit) + " more";
  return out + ")";
}

}  // namespace

Expected<nlohmann::json> read_json_object(const std::string& file, const std::string& missing) {
  std::ifstream in(file);
  if (!in) return not_found(file + " is missing: " + missing);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return corrupt_file(file + " is not a JSON object");
  return j;
}

Expected<nlohmann::json> read_model_config(const std::string& folder) {
  const std::string config_path = (fs::path(folder) / "config.json").string();
  auto mapped = map_file(config_path);
  if (!mapped.has_value() && mapped.status().code() == ErrorCode::kNotFound)
    return not_found(folder + ": no config.json; a diffusers model folder needs config.json next " +
                     "to the weights (pass the component folder, e.g. <model>/transformer)");
  if (!mapped.has_value()) return mapped.status();
  const char* text = reinterpret_cast<const char*>(mapped->data);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text, text + mapped->size);
  } catch (const nlohmann::json::exception& e) {
    return corrupt_file(config_path + " is not valid JSON (" + e.what() +
                        "); re-download it or fix the edit");
  }
  if (!config.is_object())
    return corrupt_file(config_path + " must hold a JSON object, got a JSON " +
                        config.type_name() + "; re-download it");
  return config;
}

Expected<ModelFolder> ModelFolder::open(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return not_found(path + ": no such folder; pass a diffusers component folder holding " +
                     "config.json and *.safetensors");
  if (!fs::is_directory(path, ec))
    return invalid_argument(path + " is a file; pass the folder holding config.json and the weights");
  OROCHI_ASSIGN_OR_RETURN(nlohmann::json config, read_model_config(path));
  OROCHI_ASSIGN_OR_RETURN(Checkpoint weights, Checkpoint::open(path));
  return ModelFolder{path, std::move(config), std::move(weights)};
}

Status check_key_set(const std::vector<std::string>& present, const std::vector<std::string>& expected,
                     const std::string& what) {
  const std::set<std::string> have(present.begin(), present.end());
  const std::set<std::string> want(expected.begin(), expected.end());
  std::vector<std::string> unknown, missing;
  std::set_difference(have.begin(), have.end(), want.begin(), want.end(), std::back_inserter(unknown));
  std::set_difference(want.begin(), want.end(), have.begin(), have.end(), std::back_inserter(missing));
  if (unknown.empty() && missing.empty()) return Status::ok();

  constexpr size_t kShown = 10;
  std::string message = what + ": ";
  if (!unknown.empty()) message += describe_keys(unknown, "unknown", kShown);
  if (!unknown.empty() && !missing.empty()) message += ", ";
  if (!missing.empty()) message += describe_keys(missing, "missing", kShown);
  return invalid_argument(message + "; is this the right model folder?");
}

}  // namespace orochi::weights
