// Validation of a safetensors JSON header, separate from the mapping so it can be read (and
// fuzzed) on its own. Internal to the weights layer: use SafetensorsFile.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "weights/safetensors.h"

namespace orochi::weights::detail {

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // sorted by begin
  std::map<std::string, std::string> metadata;
};

// Parses `json_text` and checks every entry against a data section of `data_bytes` bytes: known
// dtype, integer shape, byte count matching the shape, in range, no two tensors overlapping.
// `label` (the file) prefixes every error message.
Expected<SafetensorsHeader> parse_safetensors_header(std::string_view json_text,
                                                     uint64_t data_bytes,
                                                     const std::string& label);

// `name` quoted for an error message, cut short: names come from untrusted files and may be huge.
std::string quote_name(std::string_view name);

}  // namespace orochi::weights::detail
