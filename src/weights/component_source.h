// A model component (a VAE, a text encoder) as a user names it: a diffusers component folder
// (config.json beside the weights), or one .safetensors file as ComfyUI keeps components in its
// models/ folders. A single file carries no config: a config.json beside it is read when there is
// one, else the component's loader takes its released config (and says so), and every key and shape
// is checked against it, so a config that does not belong to the file is refused, not guessed past.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "weights/checkpoint.h"

namespace orochi::weights {

// Where a component's config comes from, before any weight is opened.
struct ComponentConfig {
  bool single_file = false;
  std::optional<nlohmann::json> config;  // absent: a single file with no config.json beside it
  std::string from;                      // the config.json's path; empty when absent
  // "the released <what> config" when absent, else `from`: how notes and errors name it.
  std::string describe(const std::string& released) const { return config ? from : "the released " + released + " config"; }
};

// `path` is a folder (its config.json is required, as ModelFolder::open) or a regular file (a
// config.json beside it is optional). `flag` names the option in errors ("--vae"). not_found for a
// path that does not exist; corrupt_file for a config.json that is not a JSON object.
Expected<ComponentConfig> component_config(const std::string& path, const std::string& flag);

struct ComponentSource {
  std::string path;
  ComponentConfig config;
  Checkpoint weights;
};
// component_config, then the weights (a folder's safetensors, or the file).
Expected<ComponentSource> open_component(const std::string& path, const std::string& flag);

// The first `limit` key names of a checkpoint, comma-separated: what a refusal shows of a file whose
// naming it cannot tell.
std::string first_keys(const Checkpoint& checkpoint, size_t limit = 6);

}  // namespace orochi::weights
