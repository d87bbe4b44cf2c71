// The tiny checkpoint of tiny_checkpoint.h laid out as the original release (HF MiniMaxAI/MiniMax-H3,
// MODELS_H3.md §7), written at test time from the repository's tiny files (no new data): FL2VA/ and
// Ref2VA/, each with model_index.json (its partition), transformer/ (class MiniMaxH3DiTModel with
// the release's field names, h3_tiny's transformer_original weights without their ComfyUI prefix:
// fused per-head interleaved qkv_proj, mlp.fc1 [gate; value]; in 2 shards with
// model.safetensors.index.json), video_vae/ (wrapper config.json with the latents, source/config.json
// of class AutoencoderKLLegacy, source/model.safetensors: h3_fl2va's VAE renamed to the original
// names), audio_vae/ (config.json, metadata.json kwargs, h3_fl2va's audio VAE file as
// model.safetensors) and the tokenizer / text encoder / processor links. Ref2VA/'s transformer is
// the bf16-rounded weights, as TinyRefPartition::kDistinct's transformer_ref/.
#pragma once

#include <filesystem>

namespace orochi::testing {

struct ReleaseFolders {
  bool fl2va = true, ref2va = true;
};
void assemble_tiny_release(const std::filesystem::path& root, ReleaseFolders folders = {});

}  // namespace orochi::testing
