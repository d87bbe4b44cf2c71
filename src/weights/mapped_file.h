// A whole file mapped read-only. The mapping lives as long as `owner` (and every copy of it), so
// tensors viewing it stay valid after the file object that created them is gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace orochi::weights {

struct MappedFile {
  std::shared_ptr<const void> owner;  // munmaps when the last copy goes
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Maps `path` with PROT_READ / MAP_PRIVATE: pages come from the page cache on demand and are
// shared with every other process reading the same checkpoint. Errors: not_found, invalid_argument
// (a directory or other non-regular file), io_error. An empty file maps to size 0, data nullptr.
Expected<MappedFile> map_file(const std::string& path);

}  // namespace orochi::weights
