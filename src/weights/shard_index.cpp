#include "weights/shard_index.h"

#include <nlohmann/json.hpp>
#include <set>

#include "weights/mapped_file.h"

namespace orochi::weights::detail {
namespace {

Status bad_index(const std::string& path, const std::string& what) {
  return corrupt_file(path + ": " + what + "; the index is damaged: re-download it");
}

}  // namespace

Expected<ShardIndex> read_shard_index(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(MappedFile mapped, map_file(path));
  const char* text = reinterpret_cast<const char*>(mapped.data);
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text, text + mapped.size);
  } catch (const nlohmann::json::exception& e) {
    return bad_index(path, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!root.is_object()) return bad_index(path, "the index must be a JSON object");
  // "metadata" (total_size and such) carries nothing we rely on, but must be well-formed if there.
  if (root.contains("metadata") && !root["metadata"].is_object())
    return bad_index(path, "\"metadata\" must be an object");
  const auto wm = root.find("weight_map");
  if (wm == root.end() || !wm->is_object())
    return bad_index(path, "\"weight_map\" (tensor name -> shard file) is missing or not an object");

  ShardIndex index;
  std::set<std::string> shards;
  for (const auto& [name, shard] : wm->items()) {
    if (!shard.is_string() || shard.get_ref<const std::string&>().empty())
      return bad_index(path, "weight_map['" + name + "'] must be a shard file name");
    const std::string& file = shard.get_ref<const std::string&>();
    // Shards live next to the index; an absolute path would point outside the model folder.
    if (file.front() == '/')
      return bad_index(path, "weight_map['" + name + "'] names '" + file +
                                 "'; shard names must be relative to the index's folder");
    index.weight_map.emplace(name, file);
    shards.insert(file);
  }
  index.shards.assign(shards.begin(), shards.end());
  return index;
}

}  // namespace orochi::weights::detail
