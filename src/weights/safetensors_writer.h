// Writes safetensors files (tests, converters, dumping activations for comparison).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::weights {

// Writes `tensors` (host tensors, any layout; stored contiguous, in the given order) and
// `metadata` to `path`. The header is padded with spaces to a multiple of 8 bytes so the data
// section starts 8-aligned. The file is written to `path`.tmp and renamed over `path`, so a
// failed write never leaves a half-written file under the real name.
// Errors: invalid_argument (undefined or device tensor, duplicate or reserved name), io_error.
Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace orochi::weights
