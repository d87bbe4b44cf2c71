#include "weights/component_source.h"

#include <filesystem>

#include "weights/model_folder.h"

namespace orochi::weights {

namespace fs = std::filesystem;

Expected<ComponentConfig> component_config(const std::string& path, const std::string& flag) {
  std::error_code ec;
  ComponentConfig c;
  if (fs::is_directory(path, ec)) {
    OROCHI_ASSIGN_OR_RETURN(nlohmann::json json, read_model_config(path));
    c.config = std::move(json);
    c.from = (fs::path(path) / "config.json").string();
    return c;
  }
  if (!fs::is_regular_file(path, ec))
    return not_found(flag + " " + path + ": no such file or folder (a .safetensors file as ComfyUI keeps it, or a "
                     "diffusers component folder with config.json)");
  c.single_file = true;
  const fs::path beside = fs::path(path).parent_path() / "config.json";
  if (fs::is_regular_file(beside, ec)) {
    OROCHI_ASSIGN_OR_RETURN(nlohmann::json json, read_model_config(beside.parent_path().string()));
    c.config = std::move(json);
    c.from = beside.string();
  }
  return c;
}

Expected<ComponentSource> open_component(const std::string& path, const std::string& flag) {
  ComponentSource s;
  s.path = path;
  OROCHI_ASSIGN_OR_RETURN(s.config, component_config(path, flag));
  OROCHI_ASSIGN_OR_RETURN(s.weights, Checkpoint::open(path));
  return s;
}

std::string first_keys(const Checkpoint& checkpoint, size_t limit) {
  const std::vector<std::string> names = checkpoint.names();
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " keys)";
  return out.empty() ? "(no tensors)" : out;
}

}  // namespace orochi::weights
