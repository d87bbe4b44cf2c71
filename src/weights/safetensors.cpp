#include "weights/safetensors.h"

#include <bit>
#include <cstring>

#include "weights/mapped_file.h"
#include "weights/safetensors_header.h"

namespace orochi::weights {
namespace {

// Tensor bytes are viewed in place, and safetensors stores them little-endian.
static_assert(std::endian::native == std::endian::little,
              "zero-copy safetensors views assume a little-endian host");

// Real headers are kilobytes to a few megabytes; a length past this is a wrong or damaged file,
// and trusting it would make us parse (and allocate for) garbage.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

constexpr const char* kTruncated = "the file is truncated: re-download or re-convert it";

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Expected<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(MappedFile mapped, map_file(path));
  return parse(std::move(mapped.owner), mapped.data, mapped.size, path);
}

Expected<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::shared_ptr<const void> owner,
                                                                  const uint8_t* data, size_t size,
                                                                  const std::string& label) {
  if (size < 8 || data == nullptr)
    return corrupt_file(label + ": " + std::to_string(size) +
                        " bytes is too short for a safetensors file (it starts with an 8-byte " +
                        "header length); " + kTruncated);
  const uint64_t header_len = read_u64_le(data);
  if (header_len > kMaxHeaderBytes)
    return corrupt_file(label + ": the header length field says " + std::to_string(header_len) +
                        " bytes (over 100 MiB), so this is not a safetensors file or its first " +
                        "8 bytes are damaged; re-download or re-convert it");
  if (header_len > size - 8)
    return corrupt_file(label + ": the header length field says " + std::to_string(header_len) +
                        " bytes but only " + std::to_string(size - 8) + " follow; " + kTruncated);
  const uint64_t data_bytes = size - 8 - header_len;

  const std::string_view json_text(reinterpret_cast<const char*>(data + 8), header_len);
  OROCHI_ASSIGN_OR_RETURN(detail::SafetensorsHeader header,
                          detail::parse_safetensors_header(json_text, data_bytes, label));

  auto file = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  file->label_ = label;
  file->data_section_ = data + 8 + header_len;
  file->data_bytes_ = data_bytes;
  // Buffer wants a mutable pointer; the mapping is PROT_READ, so a stray write faults loudly
  // instead of silently diverging from the file.
  file->buffer_ = Buffer::wrap(const_cast<uint8_t*>(file->data_section_), data_bytes,
                               std::move(owner));
  file->tensors_ = std::move(header.tensors);
  file->metadata_ = std::move(header.metadata);
  for (size_t i = 0; i < file->tensors_.size(); ++i) file->index_.emplace(file->tensors_[i].name, i);
  return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Tensor SafetensorsFile::tensor(const TensorInfo& info) const {
  OROCHI_CHECK(info.begin <= info.end && info.end <= data_bytes_, "tensor ",
               detail::quote_name(info.name), " is not from ", label_);
  const uint8_t* src = data_section_ + info.begin;
  const size_t elem = dtype_size(info.dtype);
  if (reinterpret_cast<uintptr_t>(src) % elem == 0)
    return Tensor::from_buffer(buffer_, info.begin, info.shape, info.dtype);
  // The format does not promise alignment (offsets are packed in whatever order the writer chose),
  // and kernels read whole elements, so misaligned data gets one aligned copy.
  Tensor copy = Tensor::empty(info.shape, info.dtype);
  if (info.nbytes() > 0) std::memcpy(copy.raw_data(), src, info.nbytes());
  return copy;
}

}  // namespace orochi::weights
