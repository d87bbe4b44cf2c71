// Typed reads of a model's config.json fields: a field that is present must have its JSON type, and
// the error names the field and what it holds (`'hidden_size' must be an integer, got 24.5`), where
// nlohmann's get<int64_t>() would truncate 24.5 to 24 without a word. A missing or null field keeps
// the caller's default. Every model config can read its fields through these.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::weights {

// A JSON integer in int64_t's range (24.0 and 24.5 are refused: configs write integers as such).
Status read_int_field(const nlohmann::json& config, const char* key, int64_t& out);
// Any finite JSON number (an integer is taken as its double).
Status read_double_field(const nlohmann::json& config, const char* key, double& out);
Status read_bool_field(const nlohmann::json& config, const char* key, bool& out);
Status read_string_field(const nlohmann::json& config, const char* key, std::string& out);
// A list of JSON integers; `size` > 0 also requires that many.
Status read_int_list_field(const nlohmann::json& config, const char* key, std::vector<int64_t>& out,
                           size_t size = 0);

}  // namespace orochi::weights
