// Where each part of a model comes from, decided once before any weight is read: MODEL_DIR's
// component folders, files given one by one (--transformer, --text-encoder, --vae, --audio-vae,
// --tokenizer), or the files of a ComfyUI models/ tree (--comfy-models) found by their keys. The
// explicit options win over MODEL_DIR's folders and over what the tree holds; a part nobody gives
// is the built-in demo model's (without MODEL_DIR and --comfy-models) or missing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine_options.h"
#include "models/h3/model_folder_parts.h"
#include "models/h3/weights.h"

namespace orochi::engine {

struct ModelComponents {
  // MODEL_DIR's layout and where its parts live (diffusers or the original release's FL2VA/ and
  // Ref2VA/); none without MODEL_DIR. The transformer partitions and processor/ come from here.
  std::optional<h3::FolderParts> folder;
  std::optional<std::string> transformer_file;  // a single-file transformer (h3::load_transformer_file)
  // Each a component folder or a single .safetensors file; none: MODEL_DIR lacks it, or the demo's.
  std::optional<std::string> vae, audio_vae, text_encoder;
  std::optional<std::string> tokenizer;  // a folder holding tokenizer.json (or the file itself)
  std::vector<std::string> notes;        // what --comfy-models found, one line each
  // Any part that replaces one of MODEL_DIR's folders or the demo's.
  bool overrides = false;
};

// A single-file transformer read as the user's options say (--transformer-config, --qkv-order); a
// GPU run keeps its weights as stored (its upload converts). Errors: load_transformer_file's, and an
// unknown --qkv-order.
Expected<h3::TransformerFile> read_transformer_file(const ModelSource& source, const std::string& file, bool on_gpu);

// The parts of `source`. Errors: MODEL_DIR's own (h3::model_folder_parts); MODEL_DIR with --comfy-models (one or the other: the options
// replace parts of MODEL_DIR); a --comfy-models folder that is not a folder; a part it holds in
// more than one file (the files named: pick one with its option); a tree without a transformer or
// a VAE (the folders searched named, with what else they hold).
Expected<ModelComponents> resolve_components(const ModelSource& source);

// What a ComfyUI models/ tree holds for MiniMax-H3, by each .safetensors file's keys (headers only):
// diffusion_models/ (or unet/) for the transformer, text_encoders/ (or clip/) for Qwen3-VL, vae/
// for both VAEs, each searched with its subfolders.
struct ComfyFinds {
  std::vector<std::string> transformers, text_encoders, text_only, video_vaes, audio_vaes;
  std::vector<std::string> unreadable;  // "file: why", files that are not valid safetensors
  std::vector<std::string> searched;    // the folders that exist
};
Expected<ComfyFinds> scan_comfy_models(const std::string& root);

}  // namespace orochi::engine
