// Where each part of a MiniMax-H3 model folder lives, decided from the folder's files in one place.
// Two layouts (MODELS_H3.md §7), both from HF MiniMaxAI/MiniMax-H3:
//   diffusers  transformer/ (t2va, fl2va), transformer_ref/ (ref2va), vae/, audio_vae/, text_encoder/,
//              tokenizer/, processor/ side by side;
//   release    FL2VA/ (t2va, fl2va) and Ref2VA/ (ref2va), each with model_index.json (class
//              MiniMaxH3Pipeline, _minimax_h3.partition "fl2va" / "ref2va"), transformer/ (class
//              MiniMaxH3DiTModel, original key names, sharded with model.safetensors.index.json),
//              video_vae/ (wrapper config + source/), audio_vae/ (metadata.json), text_encoder/,
//              tokenizer/, processor/. MODEL_DIR may be the root holding both or either folder alone.
// A release folder is told by its model_index.json, never by a folder's name.
#pragma once

#include <string>

#include "core/status.h"

namespace orochi::h3 {

enum class FolderLayout { kDiffusers, kReleaseRoot, kReleaseFl2va, kReleaseRef2va };

struct FolderParts {
  std::string root;  // MODEL_DIR as given
  FolderLayout layout = FolderLayout::kDiffusers;
  // The two partitions' transformer folders; empty when MODEL_DIR has none of that kind (a release
  // folder alone; a diffusers folder without transformer_ref/).
  std::string transformer, transformer_ref;
  // The shared parts (a release root takes FL2VA/'s, or Ref2VA/'s without FL2VA/). Paths only:
  // whether each exists is said where it is needed (a prompt needs the tokenizer, ...).
  std::string vae, audio_vae, text_encoder, tokenizer, processor;

  bool release() const { return layout != FolderLayout::kDiffusers; }
  // The transformer folder `workflow` (t2va, fl2va, ref2va) runs on; not_found naming the folder
  // that is missing and which folder to pass instead.
  Expected<std::string> partition_folder(const std::string& workflow) const;
  // The partition read when the engine opens: transformer/ when MODEL_DIR has it, else
  // transformer_ref/ (the release's Ref2VA/ alone). "transformer" or "transformer_ref".
  std::string opening_partition() const { return transformer.empty() ? "transformer_ref" : "transformer"; }
  std::string opening_folder() const { return transformer.empty() ? transformer_ref : transformer; }
  std::string describe() const;  // "the original release (FL2VA/ + Ref2VA/)", "diffusers layout"
};

// Errors: not a folder; a release model_index.json without its _minimax_h3.partition, or one whose
// partition is not its folder's (FL2VA/ saying ref2va); a release folder without transformer/.
Expected<FolderParts> model_folder_parts(const std::string& dir);

}  // namespace orochi::h3
