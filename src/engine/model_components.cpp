#include "engine/model_components.h"

#include <algorithm>
#include <filesystem>

#include "models/h3/checkpoint_layout.h"
#include "models/h3_audio_vae/checkpoint_naming.h"
#include "models/h3_video_vae/checkpoint_naming.h"
#include "weights/checkpoint.h"

namespace orochi::engine {
namespace {

namespace fs = std::filesystem;

// The kinds of file a ComfyUI tree holds that MiniMax-H3 reads, told by their keys alone.
enum class Kind { kTransformer, kTextEncoder, kTextOnly, kVideoVae, kAudioVae, kOther };

Kind classify(const weights::Checkpoint& ckpt) {
  if (Expected<h3::KeyLayout> layout = h3::detect_key_layout(ckpt)) {
    const char* audio_in = layout->flavor == h3::KeyFlavor::kOriginal ? "audio_patch_proj.weight" : "audio_proj_in.weight";
    if (ckpt.contains(layout->prefix + audio_in)) return Kind::kTransformer;
  }
  if (h3vae::detect_vae_naming(ckpt).has_value() && ckpt.contains("decoder.transformer_blocks.0.scale1"))
    return Kind::kVideoVae;
  if (h3_audio::detect_audio_vae_naming(ckpt).has_value() && ckpt.contains("dec_in_proj.weight"))
    return Kind::kAudioVae;
  // A Qwen3 decoder (per-head q_norm) under one of the text loader's prefixes; with a vision tower it
  // is a Qwen3-VL conditioner, without one only a text model of the same family.
  for (const char* prefix : {"model.language_model.", "language_model.", "model.", ""}) {
    const std::string p = prefix;
    if (ckpt.contains(p + "embed_tokens.weight") && ckpt.contains(p + "layers.0.self_attn.q_norm.weight")) {
      const bool vision = ckpt.contains("visual.patch_embed.proj.weight") ||
                          ckpt.contains("model.visual.patch_embed.proj.weight");
      return vision ? Kind::kTextEncoder : Kind::kTextOnly;
    }
  }
  return Kind::kOther;
}

// Every .safetensors file under `folder` (with subfolders), in name order.
std::vector<std::string> safetensors_under(const fs::path& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".safetensors") files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string listed(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files) out += (out.empty() ? "" : ", ") + f;
  return out;
}

// The one file of a kind the tree holds: none, or refused when there are several.
Expected<std::optional<std::string>> the_one(const std::vector<std::string>& files, const std::string& what,
                                             const std::string& option) {
  if (files.empty()) return std::optional<std::string>();
  if (files.size() > 1)
    return invalid_argument("--comfy-models holds " + std::to_string(files.size()) + " " + what + " files (" +
                            listed(files) + "); pick one with " + option + " FILE");
  return std::optional<std::string>(files.front());
}

}  // namespace

Expected<ComfyFinds> scan_comfy_models(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return not_found("--comfy-models " + root + ": no such folder (ComfyUI's models/ folder, holding "
                     "diffusion_models/, text_encoders/ and vae/)");
  ComfyFinds finds;
  for (const char* sub : {"diffusion_models", "unet", "text_encoders", "clip", "vae"}) {
    const fs::path folder = fs::path(root) / sub;
    if (!fs::is_directory(folder, ec)) continue;
    finds.searched.push_back(folder.string());
    for (const std::string& file : safetensors_under(folder)) {
      Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(file);  // the header only: tensors are mapped
      if (!ckpt) {
        finds.unreadable.push_back(file + ": " + ckpt.status().message());
        continue;
      }
      switch (classify(*ckpt)) {
        case Kind::kTransformer: finds.transformers.push_back(file); break;
        case Kind::kTextEncoder: finds.text_encoders.push_back(file); break;
        case Kind::kTextOnly: finds.text_only.push_back(file); break;
        case Kind::kVideoVae: finds.video_vaes.push_back(file); break;
        case Kind::kAudioVae: finds.audio_vaes.push_back(file); break;
        case Kind::kOther: break;
      }
    }
  }
  // unet/ and clip/ are older names of the same folders: a file seen through both is one file.
  for (auto* list : {&finds.transformers, &finds.text_encoders, &finds.text_only, &finds.video_vaes, &finds.audio_vaes}) {
    std::vector<std::string> unique;
    for (const std::string& f : *list) {
      const bool seen = std::any_of(unique.begin(), unique.end(), [&](const std::string& u) {
        std::error_code e;
        return fs::equivalent(u, f, e);
      });
      if (!seen) unique.push_back(f);
    }
    *list = std::move(unique);
  }
  return finds;
}

Expected<ModelComponents> resolve_components(const ModelSource& source) {
  ModelComponents c;
  if (source.dir && source.comfy_models)
    return invalid_argument("MODEL_DIR and --comfy-models are two model sources: pass one (--transformer, "
                            "--text-encoder, --vae, --audio-vae and --tokenizer replace single parts of either)");
  c.transformer_file = source.transformer_file;
  c.vae = source.vae;
  c.audio_vae = source.audio_vae;
  c.text_encoder = source.text_encoder;
  c.tokenizer = source.tokenizer;
  c.overrides = source.transformer_file || source.vae || source.audio_vae || source.text_encoder || source.tokenizer;
  std::error_code ec;
  if (source.dir) {
    OROCHI_ASSIGN_OR_RETURN(c.folder, h3::model_folder_parts(*source.dir));
    const h3::FolderParts& parts = *c.folder;
    if (!c.vae) c.vae = parts.vae;
    if (!c.audio_vae) c.audio_vae = parts.audio_vae;
    if (!c.text_encoder && fs::exists(parts.text_encoder, ec)) c.text_encoder = parts.text_encoder;
    if (!c.tokenizer) c.tokenizer = parts.tokenizer;  // its absence is said where a prompt needs it
    if (parts.release()) c.notes.push_back(*source.dir + ": " + parts.describe());
    return c;
  }
  if (!source.comfy_models) return c;

  OROCHI_ASSIGN_OR_RETURN(const ComfyFinds finds, scan_comfy_models(*source.comfy_models));
  c.overrides = true;
  auto take = [&](std::optional<std::string>& part, const std::vector<std::string>& files, const std::string& what,
                  const std::string& option) -> Status {
    if (part) return Status::ok();  // given explicitly
    OROCHI_ASSIGN_OR_RETURN(part, the_one(files, what, option));
    if (part) c.notes.push_back(what + " " + *part + " (found in --comfy-models by its keys)");
    return Status::ok();
  };
  OROCHI_RETURN_IF_ERROR(take(c.transformer_file, finds.transformers, "MiniMax-H3 transformer", "--transformer"));
  OROCHI_RETURN_IF_ERROR(take(c.vae, finds.video_vaes, "MiniMax-H3 video VAE", "--vae"));
  OROCHI_RETURN_IF_ERROR(take(c.audio_vae, finds.audio_vaes, "MiniMax-H3 audio VAE", "--audio-vae"));
  OROCHI_RETURN_IF_ERROR(take(c.text_encoder, finds.text_encoders, "Qwen3-VL text encoder", "--text-encoder"));
  std::vector<std::string> missing;
  if (!c.transformer_file) missing.push_back("a MiniMax-H3 transformer (in diffusion_models/; --transformer FILE)");
  if (!c.vae) missing.push_back("a MiniMax-H3 video VAE (in vae/; --vae FILE)");
  if (!c.audio_vae) missing.push_back("a MiniMax-H3 audio VAE (in vae/; --audio-vae FILE)");
  if (!missing.empty()) {
    std::string message = "--comfy-models " + *source.comfy_models + " lacks ";
    for (size_t i = 0; i < missing.size(); ++i) message += (i ? "; " : "") + missing[i];
    message += ". Searched: " + (finds.searched.empty() ? std::string("no diffusion_models/, unet/, text_encoders/, "
                                                                      "clip/ or vae/ folder")
                                                        : listed(finds.searched));
    if (!finds.unreadable.empty()) message += ". Not safetensors files: " + listed(finds.unreadable);
    return not_found(message);
  }
  if (!c.text_encoder && !finds.text_only.empty())
    c.notes.push_back("no Qwen3-VL text encoder (with its vision tower) in --comfy-models; Qwen3 text models without "
                      "one, not taken: " + listed(finds.text_only) + " (--text-encoder FILE takes one)");
  return c;
}

Expected<h3::TransformerFile> read_transformer_file(const ModelSource& source, const std::string& file, bool on_gpu) {
  h3::TransformerFileOptions o;
  o.config_path = source.transformer_config;
  OROCHI_ASSIGN_OR_RETURN(o.qkv_order, h3::parse_qkv_order(source.qkv_order));
  o.as_stored = on_gpu;
  return h3::load_transformer_file(file, o);
}

}  // namespace orochi::engine
