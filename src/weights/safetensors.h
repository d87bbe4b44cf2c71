// One safetensors file, mapped read-only and viewed zero-copy.
//
// Layout: u64 little-endian header length N, N bytes of JSON header, then the data section. The
// header maps tensor names to {dtype, shape, data_offsets=[begin, end)} (offsets relative to the
// data section) plus an optional "__metadata__" object of strings. Everything in the header is
// validated up front, so a tensor handed out later is always inside the file: a corrupt or hostile
// file becomes a Status, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::weights {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets relative to the data section, begin <= end
  uint64_t end = 0;
  uint64_t nbytes() const { return end - begin; }
};

class SafetensorsFile {
 public:
  // Maps `path` (read-only, MAP_PRIVATE) and validates it. Errors: not_found (no such file),
  // invalid_argument (a directory or special file), io_error (the OS refused), corrupt_file.
  static Expected<std::shared_ptr<SafetensorsFile>> open(const std::string& path);

  // The same validation on bytes already in memory. `owner` keeps `data` alive for as long as any
  // tensor viewing it lives; `label` names the bytes in error messages (usually a path).
  static Expected<std::shared_ptr<SafetensorsFile>> parse(std::shared_ptr<const void> owner,
                                                          const uint8_t* data, size_t size,
                                                          const std::string& label);

  // Sorted by position in the data section (ascending begin).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorInfo* find(std::string_view name) const;
  // A view into the mapping that keeps it alive (outlives this object). Read-only memory: writing
  // through it faults, so callers that modify weights must clone() first. A tensor whose bytes are
  // not aligned to its element size (legal in safetensors) is copied into an aligned buffer.
  Tensor tensor(const TensorInfo& info) const;

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return label_; }
  uint64_t data_bytes() const { return data_bytes_; }
  // Start of the data section (for zero-copy checks and diagnostics).
  const uint8_t* data_section() const { return data_section_; }

 private:
  SafetensorsFile() = default;

  std::string label_;
  const uint8_t* data_section_ = nullptr;
  uint64_t data_bytes_ = 0;
  std::shared_ptr<Buffer> buffer_;  // wraps the data section; holds the owner (the mapping)
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

}  // namespace orochi::weights
