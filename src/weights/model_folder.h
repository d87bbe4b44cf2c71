// A diffusers-layout component folder (transformer/, vae/, text_encoder/...): config.json next to
// the weights. Also the key-set check every model loader runs against its expected parameter names.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "weights/checkpoint.h"

namespace orochi::weights {

// A component folder's config.json alone (no weights touched): for checks and plans made before
// loading. Errors: not_found (no config.json, with advice), io_error, corrupt_file (not a JSON object).
Expected<nlohmann::json> read_model_config(const std::string& folder);

// Any JSON file that must hold an object (a release folder's wrapper config, metadata.json).
// Errors: not_found "FILE is missing: <missing>" (say there what the file holds and where it comes
// from), corrupt_file when it is not a JSON object.
Expected<nlohmann::json> read_json_object(const std::string& file, const std::string& missing);

struct ModelFolder {
  std::string path;
  nlohmann::json config;  // config.json, parsed; always an object
  Checkpoint weights;

  // Errors: not_found (no folder, no config.json, no weights), corrupt_file (config.json is not a
  // JSON object, or the weights fail Checkpoint::open's checks).
  static Expected<ModelFolder> open(const std::string& path);
};

// Compares a checkpoint's tensor names with the names a model expects. Both directions matter:
// an unknown key usually means the wrong model or variant, a missing key means a weight would stay
// uninitialized. Returns invalid_argument listing up to 10 of each, e.g.
//   "transformer: 2 unknown keys (bar.bias, foo.weight), 1 missing key (proj_in.weight);
//    is this the right model folder?"
Status check_key_set(const std::vector<std::string>& present, const std::vector<std::string>& expected,
                     const std::string& what);

}  // namespace orochi::weights
