#include "weights/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

namespace orochi::weights {
namespace {

using nlohmann::json;

// Closes and deletes the temporary file unless the write was committed by rename.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {
    file_ = std::fopen(path_.c_str(), "wb");
    opened_ = file_ != nullptr;
  }
  ~TempFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (opened_ && !committed_) std::remove(path_.c_str());  // never remove what we did not create
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  std::FILE* get() const { return file_; }
  const std::string& path() const { return path_; }
  bool write(const void* data, size_t bytes) {
    return bytes == 0 || std::fwrite(data, 1, bytes, file_) == bytes;
  }
  // fclose flushes; a full disk often shows up only here.
  bool close() {
    const int rc = std::fclose(file_);
    file_ = nullptr;
    return rc == 0;
  }
  void commit() { committed_ = true; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool opened_ = false;
  bool committed_ = false;
};

Status write_error(const std::string& path, const std::string& what) {
  return io_error(path + ": " + what + " (" + std::strerror(errno) +
                  "); check that the folder exists, is writable and has free space");
}

}  // namespace

Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  // Validate and lay out everything first, so nothing touches the disk for a bad request.
  std::vector<Tensor> bodies;  // contiguous copies where needed
  bodies.reserve(tensors.size());
  json header = json::object();
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__")
      return invalid_argument(path + ": \"__metadata__\" is reserved and cannot name a tensor");
    if (!seen.insert(name).second)
      return invalid_argument(path + ": tensor '" + name + "' is listed twice");
    if (!tensor.defined())
      return invalid_argument(path + ": tensor '" + name + "' is undefined");
    if (tensor.device().kind != DeviceKind::kCPU)
      return invalid_argument(path + ": tensor '" + name + "' is on " +
                              device_name(tensor.device()) + "; copy it to the host first");
    // Note: an fp8 tensor's scale() is not stored; checkpoints carry scales as separate tensors.
    bodies.push_back(tensor.contiguous());
    const uint64_t bytes = bodies.back().nbytes();
    header[name] = {{"dtype", dtype_safetensors_name(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // names or metadata that are not valid UTF-8
    return invalid_argument(path + ": cannot encode the header (" + e.what() + ")");
  }
  // Padding to 8 keeps the data section 8-aligned in the file (and so in a page-aligned mapping).
  text.append((8 - text.size() % 8) % 8, ' ');

  uint8_t len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(uint64_t{text.size()} >> (8 * i));

  TempFile tmp(path + ".tmp");
  if (tmp.get() == nullptr) return write_error(tmp.path(), "cannot create");
  bool ok = tmp.write(len_bytes, 8) && tmp.write(text.data(), text.size());
  for (const Tensor& t : bodies) {
    if (!ok) break;
    if (t.nbytes() > 0) ok = tmp.write(t.raw_data(), t.nbytes());
  }
  if (!ok) return write_error(tmp.path(), "write failed");
  if (!tmp.close()) return write_error(tmp.path(), "write failed");
  if (std::rename(tmp.path().c_str(), path.c_str()) != 0)
    return write_error(path, "cannot rename " + tmp.path() + " onto it");
  tmp.commit();
  return Status::ok();
}

}  // namespace orochi::weights
