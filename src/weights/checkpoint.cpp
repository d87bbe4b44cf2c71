#include "weights/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "core/log.h"
#include "weights/safetensors_header.h"
#include "weights/shard_index.h"

namespace orochi::weights {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExpected =
    "expected a .safetensors file, a *.safetensors.index.json, or a folder holding them";

std::string join_names(const std::vector<std::string>& names, size_t limit) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i)
    out += (i ? ", " : "") + detail::quote_name(names[i]);
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size() - limit) + " more)";
  return out;
}

bool is_pickle_weights(const std::string& name) {
  return name.ends_with(".bin") || name.ends_with(".pt") || name.ends_with(".pth") ||
         name.ends_with(".ckpt");
}

// PyTorch pickles would otherwise fail as "corrupt safetensors", which misleads.
Status pickle_unsupported(const std::string& path) {
  return unsupported(path + " is a PyTorch pickle checkpoint, which Orochi does not load (pickles "
                     "can run code); convert it to safetensors first");
}

struct FolderListing {
  std::vector<std::string> indexes;      // *.safetensors.index.json
  std::vector<std::string> safetensors;  // *.safetensors
  bool has_pytorch_bins = false;         // *.bin / *.pt / *.pth: weights we cannot read
};

Expected<FolderListing> list_folder(const std::string& dir) {
  FolderListing listing;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;  // follows symlinks, as HF cache snapshots use them
    const std::string name = it->path().filename().string();
    const std::string full = it->path().string();
    if (name.ends_with(".safetensors.index.json")) listing.indexes.push_back(full);
    else if (name.ends_with(".safetensors")) listing.safetensors.push_back(full);
    else if (is_pickle_weights(name)) listing.has_pytorch_bins = true;
  }
  if (ec) return io_error(dir + ": cannot list the folder (" + ec.message() + ")");
  std::sort(listing.indexes.begin(), listing.indexes.end());
  std::sort(listing.safetensors.begin(), listing.safetensors.end());
  return listing;
}

}  // namespace

Expected<Checkpoint> Checkpoint::open(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return not_found(path + ": no such file or folder; " + kExpected);
  if (!fs::is_directory(st)) {
    if (path.ends_with(".index.json")) return open_index(path);
    return open_files(path, {path});
  }

  OROCHI_ASSIGN_OR_RETURN(FolderListing listing, list_folder(path));
  if (listing.indexes.size() == 1) return open_index(listing.indexes[0]);
  if (listing.indexes.size() > 1)
    // Typically diffusers variants (model.safetensors.index.json next to model.fp16....): which
    // one is meant is the caller's choice, not ours.
    return invalid_argument(path + " holds " + std::to_string(listing.indexes.size()) +
                            " shard indexes (" + join_names(listing.indexes, 10) +
                            "); pass the one you want");
  if (!listing.safetensors.empty()) return open_files(path, listing.safetensors);
  return not_found(path + ": no weights in this folder; " + kExpected +
                   (listing.has_pytorch_bins
                        ? " (it holds PyTorch pickle weights: convert them to safetensors first)"
                        : ""));
}

Expected<Checkpoint> Checkpoint::open_files(const std::string& path,
                                            const std::vector<std::string>& files) {
  Checkpoint ckpt;
  ckpt.path_ = path;
  for (const std::string& f : files) {
    if (is_pickle_weights(f)) return pickle_unsupported(f);
    OROCHI_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(f));
    OROCHI_RETURN_IF_ERROR(ckpt.add_file(std::move(file)));
  }
  return ckpt;
}

Expected<Checkpoint> Checkpoint::open_index(const std::string& index_path) {
  OROCHI_ASSIGN_OR_RETURN(detail::ShardIndex index, detail::read_shard_index(index_path));
  const fs::path dir = fs::path(index_path).parent_path();

  Checkpoint ckpt;
  ckpt.path_ = index_path;
  std::map<std::string, const SafetensorsFile*> by_shard;
  for (const std::string& shard : index.shards) {
    const std::string shard_path = (dir / shard).string();
    if (is_pickle_weights(shard)) return pickle_unsupported(shard_path);
    auto file = SafetensorsFile::open(shard_path);
    if (!file.has_value() && file.status().code() == ErrorCode::kNotFound)
      return not_found(index_path + " lists shard '" + shard + "', but " + shard_path +
                       " does not exist: the download is incomplete; fetch the missing shard");
    if (!file.has_value()) return file.status().with_context("shard of " + index_path);
    by_shard[shard] = file->get();
    OROCHI_RETURN_IF_ERROR(ckpt.add_file(std::move(file).value()));
  }

  // The index is a promise about the shards; a broken promise means a mixed or damaged download.
  for (const auto& [name, shard] : index.weight_map) {
    const auto it = ckpt.entries_.find(name);
    if (it == ckpt.entries_.end() || it->second.file != by_shard[shard])
      return corrupt_file(index_path + " places tensor " + detail::quote_name(name) + " in shard '" +
                          shard + "', but that shard does not hold it" +
                          (it == ckpt.entries_.end() ? "" : " (it is in " + it->second.file->path() + ")") +
                          "; the shards and the index do not match: re-download them together");
  }
  // Extra tensors are harmless (the index is only a lookup aid) but worth one line: they often
  // mean a shard from another revision.
  std::vector<std::string> unlisted;
  for (const auto& [name, entry] : ckpt.entries_)
    if (index.weight_map.count(name) == 0) unlisted.push_back(name);
  if (!unlisted.empty())
    log_warn(index_path, ": ", unlisted.size(), " tensor(s) in its shards are not in its weight_map (",
             join_names(unlisted, 5), "); loading them anyway");
  return ckpt;
}

Status Checkpoint::add_file(std::shared_ptr<SafetensorsFile> file) {
  for (const TensorInfo& info : file->tensors()) {
    const auto [it, inserted] = entries_.emplace(info.name, Entry{file.get(), &info});
    if (!inserted)
      return corrupt_file(path_ + ": tensor " + detail::quote_name(info.name) + " is stored in both " +
                          it->second.file->path() + " and " + file->path() +
                          "; if the folder holds two copies of the weights (e.g. a .fp16 variant), "
                          "pass the file or index you want");
    total_bytes_ += info.nbytes();
  }
  files_.push_back(std::move(file));
  return Status::ok();
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;  // std::map keeps them sorted
}

const TensorInfo* Checkpoint::info(std::string_view name) const {
  const auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.info;
}

Expected<Tensor> Checkpoint::get(std::string_view name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end())
    return not_found("tensor " + detail::quote_name(name) + " is not in checkpoint " + path_ + " (" +
                     std::to_string(entries_.size()) +
                     " tensors); check that this is the right model folder and variant");
  return it->second.file->tensor(*it->second.info);
}

std::vector<std::string> Checkpoint::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

}  // namespace orochi::weights
