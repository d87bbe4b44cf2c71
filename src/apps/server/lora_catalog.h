// The LoRAs an `orochi serve` offers its requests, named at start: each `--lora FILE[:STRENGTH]`
// (merged when the server starts; a request without `loras` runs with these) and every
// `*.safetensors` directly inside `--lora-dir DIR` (offered at strength 1, merged when a request
// asks). A request names them by file name without `.safetensors` (the file stem); the engine merges
// a request's set anew only when it differs from the one it holds (Engine::use_loras).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine_options.h"

namespace orochi::apps::server {

struct OfferedLora {
  std::string name;        // the file stem, what a request names
  std::string path;
  float strength = 1.0f;   // --lora's STRENGTH, or 1: a request naming it without a strength
  bool at_start = false;   // a --lora file: in the set of a request without `loras`
};

// --lora files first (in order), then --lora-dir's by name. Refused before the server starts: a
// --lora-dir that is not a readable folder, or two files with one name (naming both).
Expected<std::vector<OfferedLora>> offered_loras(const std::vector<engine::LoraSource>& at_start,
                                                 const std::optional<std::string>& dir);

// "a, b, c" (or "none"), for messages.
std::string offered_names(const std::vector<OfferedLora>& offered);

}  // namespace orochi::apps::server
