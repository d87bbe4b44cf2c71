#include "models/h3/model_folder_parts.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

namespace orochi::h3 {
namespace {

namespace fs = std::filesystem;

// The partition a release folder's model_index.json declares ("fl2va", "ref2va"); none when the
// folder holds no model_index.json of class MiniMaxH3Pipeline (not a release folder).
Expected<std::optional<std::string>> release_partition(const fs::path& folder) {
  const fs::path file = folder / "model_index.json";
  std::ifstream in(file);
  if (!in) return std::optional<std::string>();
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || j.value("_class_name", nlohmann::json()) != "MiniMaxH3Pipeline")
    return std::optional<std::string>();
  const nlohmann::json* partition = nullptr;
  if (auto m = j.find("_minimax_h3"); m != j.end() && m->is_object())
    if (auto p = m->find("partition"); p != m->end() && p->is_string()) partition = &*p;
  if (partition == nullptr || (*partition != "fl2va" && *partition != "ref2va"))
    return invalid_argument(file.string() + " is a MiniMaxH3Pipeline index without _minimax_h3.partition \"fl2va\" or "
                            "\"ref2va\": restore the release's model_index.json (it says which workflows the folder "
                            "serves)");
  return std::optional<std::string>(partition->get<std::string>());
}

void take_shared_parts(FolderParts& p, const fs::path& folder) {
  p.vae = (folder / "video_vae").string();
  p.audio_vae = (folder / "audio_vae").string();
  p.text_encoder = (folder / "text_encoder").string();
  p.tokenizer = (folder / "tokenizer").string();
  p.processor = (folder / "processor").string();
}

Status check_transformer(const fs::path& folder) {
  std::error_code ec;
  if (!fs::exists(folder / "transformer" / "config.json", ec))
    return not_found((folder / "transformer" / "config.json").string() +
                     " is missing: a release folder holds its denoiser (class MiniMaxH3DiTModel) in transformer/");
  return Status::ok();
}

}  // namespace

Expected<FolderParts> model_folder_parts(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return not_found(dir + " is not a folder: pass a diffusers-layout model folder (transformer/, vae/, audio_vae/, "
                           "...) or the original release's (FL2VA/ and Ref2VA/), or no folder for the built-in demo "
                           "model");
  FolderParts p;
  p.root = dir;
  const fs::path root(dir);
  OROCHI_ASSIGN_OR_RETURN(const std::optional<std::string> own, release_partition(root));
  if (own) {  // FL2VA/ or Ref2VA/ alone
    OROCHI_RETURN_IF_ERROR(check_transformer(root));
    p.layout = *own == "fl2va" ? FolderLayout::kReleaseFl2va : FolderLayout::kReleaseRef2va;
    (*own == "fl2va" ? p.transformer : p.transformer_ref) = (root / "transformer").string();
    take_shared_parts(p, root);
    return p;
  }
  OROCHI_ASSIGN_OR_RETURN(const std::optional<std::string> fl2va, release_partition(root / "FL2VA"));
  OROCHI_ASSIGN_OR_RETURN(const std::optional<std::string> ref2va, release_partition(root / "Ref2VA"));
  if (fl2va || ref2va) {
    if (fl2va && *fl2va != "fl2va")
      return invalid_argument((root / "FL2VA" / "model_index.json").string() + " declares partition " + *fl2va +
                              ": FL2VA/ is the release's t2va / fl2va folder");
    if (ref2va && *ref2va != "ref2va")
      return invalid_argument((root / "Ref2VA" / "model_index.json").string() + " declares partition " + *ref2va +
                              ": Ref2VA/ is the release's ref2va folder");
    p.layout = FolderLayout::kReleaseRoot;
    if (fl2va) {
      OROCHI_RETURN_IF_ERROR(check_transformer(root / "FL2VA"));
      p.transformer = (root / "FL2VA" / "transformer").string();
    }
    if (ref2va) {
      OROCHI_RETURN_IF_ERROR(check_transformer(root / "Ref2VA"));
      p.transformer_ref = (root / "Ref2VA" / "transformer").string();
    }
    // The two folders ship the same VAEs, text encoder and processors: one set is read.
    take_shared_parts(p, root / (fl2va ? "FL2VA" : "Ref2VA"));
    return p;
  }
  p.transformer = (root / "transformer").string();
  if (fs::exists(root / "transformer_ref" / "config.json", ec)) p.transformer_ref = (root / "transformer_ref").string();
  p.vae = (root / "vae").string();
  p.audio_vae = (root / "audio_vae").string();
  p.text_encoder = (root / "text_encoder").string();
  p.tokenizer = (root / "tokenizer").string();
  p.processor = (root / "processor").string();
  return p;
}

Expected<std::string> FolderParts::partition_folder(const std::string& workflow) const {
  const bool ref = workflow == "ref2va";
  const std::string& folder = ref ? transformer_ref : transformer;
  if (!folder.empty()) return folder;
  switch (layout) {
    case FolderLayout::kReleaseFl2va:
      return not_found(root + " is the release's FL2VA/ folder (t2va, fl2va); " + workflow +
                       " runs on the Ref2VA transformer: pass the release root (the folder holding FL2VA/ and "
                       "Ref2VA/) or its Ref2VA/ folder");
    case FolderLayout::kReleaseRef2va:
      return not_found(root + " is the release's Ref2VA/ folder (ref2va only); " + workflow +
                       " runs on the FL2VA transformer: pass the release root (the folder holding FL2VA/ and "
                       "Ref2VA/) or its FL2VA/ folder");
    case FolderLayout::kReleaseRoot:
      return not_found((fs::path(root) / (ref ? "Ref2VA" : "FL2VA")).string() + "/ is missing: " + workflow +
                       " runs on the release's " + (ref ? "Ref2VA" : "FL2VA") + " transformer");
    case FolderLayout::kDiffusers:
      break;
  }
  return not_found(root + " has no transformer_ref/ folder: ref2va runs on the checkpoint's reference partition (the "
                   "release's Ref2VA transformer), which transformer/ (FL2VA: t2va, fl2va) is not; add it, or pass "
                   "--transformer FILE with the Ref2VA weights");
}

std::string FolderParts::describe() const {
  switch (layout) {
    case FolderLayout::kReleaseRoot:
      return std::string("the original release (") + (transformer.empty() ? "" : "FL2VA/") +
             (!transformer.empty() && !transformer_ref.empty() ? " + " : "") + (transformer_ref.empty() ? "" : "Ref2VA/") +
             ")";
    case FolderLayout::kReleaseFl2va: return "the original release's FL2VA/ folder";
    case FolderLayout::kReleaseRef2va: return "the original release's Ref2VA/ folder";
    case FolderLayout::kDiffusers: break;
  }
  return "diffusers layout";
}

}  // namespace orochi::h3
