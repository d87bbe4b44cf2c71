// A checkpoint: one name -> tensor map over one or many safetensors files, whichever layout the
// model was published in (a single file, a sharded *.safetensors.index.json, or a folder of either).
// Opening validates every file and the index against each other, so a later get() cannot fail on
// a damaged download; tensors are mapped, not read, until used.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "weights/safetensors.h"

namespace orochi::weights {

class Checkpoint {
 public:
  // `path` is one of:
  //   - a .safetensors file;
  //   - a *.safetensors.index.json ({"metadata": {...}, "weight_map": {name: shard file}}), shard
  //     files relative to the index's folder;
  //   - a folder holding a *.safetensors.index.json (used if present), else *.safetensors files
  //     (all of them, in name order).
  // A tensor stored in two files is an error, as is an index naming a tensor its shard lacks.
  static Expected<Checkpoint> open(const std::string& path);

  std::vector<std::string> names() const;  // sorted
  bool contains(std::string_view name) const { return entries_.count(name) > 0; }
  // nullptr when absent.
  const TensorInfo* info(std::string_view name) const;
  // A zero-copy view (see SafetensorsFile::tensor). not_found names the key and the checkpoint.
  Expected<Tensor> get(std::string_view name) const;

  uint64_t total_bytes() const { return total_bytes_; }  // sum of all tensors' bytes
  size_t size() const { return entries_.size(); }
  const std::string& path() const { return path_; }
  std::vector<std::string> files() const;  // the safetensors files, in the order opened

 private:
  struct Entry {
    const SafetensorsFile* file;  // owned by files_
    const TensorInfo* info;       // owned by *file, which never changes after parse
  };

  // Adds every tensor of `file`; a name already present is an error.
  Status add_file(std::shared_ptr<SafetensorsFile> file);
  static Expected<Checkpoint> open_index(const std::string& index_path);
  static Expected<Checkpoint> open_files(const std::string& path,
                                         const std::vector<std::string>& files);

  std::string path_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry, std::less<>> entries_;
  uint64_t total_bytes_ = 0;
};

}  // namespace orochi::weights
