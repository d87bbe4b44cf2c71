// Engine::use_loras: the LoRA set a request runs with (issue 24: a request may name its LoRAs; a set
// already merged for the loaded model is not merged again). A set is keyed by each file's content
// hash and strength, in order. When a request's key differs from the merged one, the base weights
// are read again (merging cannot be undone in bf16) and the set merged anew: for MODEL_DIR's
// partitions by use_partition (engine_partition.cpp), which reads the partition it finds unheld;
// for the one transformer of the demo or a given file, here. The GPU models go with the old weights.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/stopwatch.h"
#include "engine/engine.h"
#include "models/h3/weights.h"
#include "pipeline/t2va_models.h"

namespace orochi::engine {
namespace {

// FNV-1a (64-bit) over the file's bytes, as 16 hex digits: a cache key, not a signature.
Expected<std::string> content_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("LoRA " + path + " cannot be read");
  uint64_t h = 14695981039346656037ull;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[static_cast<size_t>(i)]);
      h *= 1099511628211ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex);
}

std::string strength_text(float s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(s));
  return text;
}

}  // namespace

Status Engine::use_loras(const GenerateRequest& request, RunReport& report) {
  namespace fs = std::filesystem;
  // The hashes of a set's files, each read once while its size and time stay.
  auto key_of = [&](const std::vector<LoraSource>& set) -> Expected<std::string> {
    std::string key;
    for (const LoraSource& l : set) {
      std::error_code ec;
      const uint64_t size = fs::file_size(l.path, ec);
      if (ec) return not_found("LoRA " + l.path + ": no such file");
      const int64_t mtime = fs::last_write_time(l.path, ec).time_since_epoch().count();
      FileHash& known = lora_hashes_[l.path];
      if (known.hash.empty() || known.size != size || known.mtime != mtime) {
        OROCHI_ASSIGN_OR_RETURN(known.hash, content_hash(l.path));
        known.size = size;
        known.mtime = mtime;
      }
      key += known.hash + "@" + strength_text(l.strength) + ";";
    }
    return key;
  };
  if (!opened_loras_) {  // the first request: open() merged the source's set
    opened_loras_ = source_.loras;
    OROCHI_ASSIGN_OR_RETURN(merged_lora_key_, key_of(source_.loras));
    loras_cached_ = false;
  } else {
    loras_cached_ = true;
  }
  const std::vector<LoraSource>& wanted = request.loras ? *request.loras : *opened_loras_;
  OROCHI_ASSIGN_OR_RETURN(const std::string key, key_of(wanted));
  if (merged_lora_key_ && key == *merged_lora_key_) return Status::ok();
  loras_cached_ = false;
  source_.loras = wanted;  // what merge_loras merges from now on
  merged_lora_key_.reset();  // unknown until the merge below (or use_partition's) succeeds
  if (source_.dir && !components_.transformer_file) {
    // MODEL_DIR's partitions: use_partition reads the workflow's partition, unheld now, and merges.
    partition_.clear();
    merged_lora_key_ = key;  // a failed read or merge leaves partition_ empty: the next request reads again
    return Status::ok();
  }
  if (source_.random_weights)
    return invalid_argument("a request's LoRAs merge into host weights, and --random-weights makes its weights on "
                            "the GPU: use a model folder or the demo model");
  const auto t0 = Clock::now();
  gpu_.reset();                           // the GPU models hold the old weights
  models_.transformer = h3::H3Weights{};  // its memory goes before the base is read
  if (components_.transformer_file) {
    // As open() read it.
    OROCHI_ASSIGN_OR_RETURN(h3::TransformerFile loaded,
                            read_transformer_file(source_, *components_.transformer_file, on_gpu_));
    models_.transformer = std::move(loaded.weights);
  } else {
    models_.transformer = pipeline::demo_t2va_models(kDemoWeightSeed).transformer;
  }
  OROCHI_RETURN_IF_ERROR(merge_loras());
  merged_lora_key_ = key;
  note("the transformer read again for the request's LoRA set (" + std::to_string(wanted.size()) + " LoRAs)");
  report.load_s += seconds_since(t0);
  return Status::ok();
}

std::vector<nlohmann::json> Engine::lora_report() const {
  std::vector<nlohmann::json> out = loras_;
  for (nlohmann::json& l : out) {
    if (auto it = lora_hashes_.find(l.value("file", "")); it != lora_hashes_.end()) l["content_fnv1a"] = it->second.hash;
    l["cached"] = loras_cached_;
    if (loras_cached_) l["merge_s"] = 0.0;
  }
  return out;
}

}  // namespace orochi::engine
