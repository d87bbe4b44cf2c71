// The index of a sharded checkpoint (model.safetensors.index.json, as written by transformers /
// diffusers save_pretrained): {"metadata": {...}, "weight_map": {tensor name: shard file name}}.
// Internal to the weights layer: Checkpoint::open reads it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::weights::detail {

struct ShardIndex {
  std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
  std::vector<std::string> shards;                // distinct shard file names, sorted
};

// Reads and checks the index's shape (not the shards). Errors: not_found, io_error, corrupt_file.
Expected<ShardIndex> read_shard_index(const std::string& path);

}  // namespace orochi::weights::detail
