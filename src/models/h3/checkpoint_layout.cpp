#include "models/h3/checkpoint_layout.h"

#include <cstring>
#include <set>
#include <utility>

#include "weights/model_folder.h"

namespace orochi::h3 {
namespace {

constexpr const char* kPrefixes[] = {"", "model.diffusion_model.", "diffusion_model.", "transformer."};
// Present in the original release but recomputed here, so allowed and ignored.
constexpr const char* kIgnoredOriginalKeys[] = {"rope.inv_freq"};

// Replaces the first occurrence of `from` (if any) with `to`.
bool replace_once(std::string& s, const char* from, const char* to) {
  const size_t at = s.find(from);
  if (at == std::string::npos) return false;
  s.replace(at, std::strlen(from), to);
  return true;
}

// "…attn.to_q.weight" -> 0, to_k -> 1, to_v -> 2, else -1.
int qkv_part(const std::string& name) {
  if (name.find(".attn.to_q.") != std::string::npos) return 0;
  if (name.find(".attn.to_k.") != std::string::npos) return 1;
  if (name.find(".attn.to_v.") != std::string::npos) return 2;
  return -1;
}

std::string fused_qkv_key(const std::string& name) {
  std::string k = original_key(name);
  replace_once(k, ".attn.to_q.", ".attn.qkv_proj.") || replace_once(k, ".attn.to_k.", ".attn.qkv_proj.") ||
      replace_once(k, ".attn.to_v.", ".attn.qkv_proj.");
  return k;
}

// The one shape and dtype check of a stored parameter: loading (read_checked) and `orochi inspect`
// (check_parameter_shapes, headers only) refuse the same tensors with the same words.
Status check_stored(const std::string& key, const Shape& stored, DType dtype, const Shape& shape) {
  if (stored != shape)
    return shape_mismatch(key + " has shape " + shape_to_string(stored) + ", expected " +
                          shape_to_string(shape) + " for this config.json: wrong model or config?");
  if (!dtype_is_float(dtype)) return shape_mismatch(key + " is " + dtype_name(dtype) + ", expected a float type");
  return Status::ok();
}

Expected<Tensor> read_checked(const weights::Checkpoint& ckpt, const std::string& key, const Shape& shape,
                              bool as_stored) {
  OROCHI_ASSIGN_OR_RETURN(Tensor t, ckpt.get(key));
  OROCHI_RETURN_IF_ERROR(check_stored(key, t.shape(), t.dtype(), shape));
  return as_stored ? t : t.to(DType::kF32);
}

// Where a diffusers parameter is stored and with which shape: the fused q/k/v of the original
// release holds the three parts of every head.
std::pair<std::string, Shape> stored_key_and_shape(const KeyLayout& layout, const ParamSpec& spec,
                                                   const H3Config& config) {
  if (layout.flavor == KeyFlavor::kDiffusers) return {layout.prefix + spec.name, spec.shape};
  if (qkv_part(spec.name) >= 0)
    return {layout.prefix + fused_qkv_key(spec.name),
            Shape{3 * config.num_attention_heads * config.attention_head_dim, spec.shape[1]}};
  return {layout.prefix + original_key(spec.name), spec.shape};
}

}  // namespace

std::string KeyLayout::describe() const {
  std::string s = flavor == KeyFlavor::kDiffusers ? "diffusers names" : "original release names";
  if (!prefix.empty()) s += " under prefix '" + prefix + "'";
  return s;
}

Expected<KeyLayout> detect_key_layout(const weights::Checkpoint& ckpt) {
  for (const char* prefix : kPrefixes) {
    const std::string p = prefix;
    if (ckpt.contains(p + "proj_in.weight") && ckpt.contains(p + "transformer_blocks.0.norm1.weight"))
      return KeyLayout{KeyFlavor::kDiffusers, p};
    if (ckpt.contains(p + "video_patch_proj.weight")) return KeyLayout{KeyFlavor::kOriginal, p};
  }
  std::string sample;
  const auto names = ckpt.names();
  for (size_t i = 0; i < names.size() && i < 5; ++i) sample += (i ? ", " : "") + names[i];
  return invalid_argument("'" + ckpt.path() +
                          "' is not a MiniMax-H3 transformer checkpoint: found neither proj_in.weight "
                          "(diffusers) nor video_patch_proj.weight (original release); its keys begin " +
                          (sample.empty() ? std::string("(none)") : sample));
}

std::string original_key(const std::string& name) {
  std::string k = name;
  static constexpr std::pair<const char*, const char*> kHeads[] = {
      {"proj_in.", "video_patch_proj."},
      {"audio_proj_in.", "audio_patch_proj."},
      {"context_embedder.", "condition_proj."},
      {"time_embedder.linear_1.", "time_embedder.proj_in."},
      {"time_embedder.linear_2.", "time_embedder.proj_out."},
      {"token_refiner.refiner_blocks.", "token_refiner.blocks."},
      {"transformer_blocks.", "blocks."},
      {"norm_out.norm.", "final_layer.norm."},
      {"norm_out.linear.", "final_layer.adaln_proj.linear."},
      {"proj_out.", "final_layer.video_out."},
      {"audio_proj_out.", "final_layer.audio_out."},
  };
  for (const auto& [from, to] : kHeads) {
    if (k.starts_with(from)) {
      k = to + k.substr(std::strlen(from));
      break;
    }
  }
  static constexpr std::pair<const char*, const char*> kInner[] = {
      {".attn.norm_q.", ".attn.q_norm."}, {".attn.norm_k.", ".attn.k_norm."},
      {".attn.to_out.0.", ".attn.out_proj."}, {".ff.net.0.proj.", ".mlp.fc1."},
      {".ff.net.2.", ".mlp.fc2."},
  };
  for (const auto& [from, to] : kInner) replace_once(k, from, to);
  return k;
}

std::vector<std::string> expected_checkpoint_keys(const KeyLayout& layout, const H3Config& config) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const ParamSpec& spec : h3_parameters(config)) {
    std::string k = layout.flavor == KeyFlavor::kDiffusers
                        ? spec.name
                        : (qkv_part(spec.name) >= 0 ? fused_qkv_key(spec.name) : original_key(spec.name));
    if (seen.insert(k).second) keys.push_back(layout.prefix + k);
  }
  return keys;
}

Status check_checkpoint_keys(const weights::Checkpoint& ckpt, const KeyLayout& layout,
                             const H3Config& config) {
  std::vector<std::string> present;
  for (const std::string& name : ckpt.names()) {
    bool ignored = false;
    if (layout.flavor == KeyFlavor::kOriginal)
      for (const char* k : kIgnoredOriginalKeys) ignored |= name == layout.prefix + k;
    if (!ignored) present.push_back(name);
  }
  return weights::check_key_set(present, expected_checkpoint_keys(layout, config),
                                "transformer checkpoint '" + ckpt.path() + "'");
}

Status check_parameter_shapes(const weights::Checkpoint& ckpt, const KeyLayout& layout, const H3Config& config) {
  for (const ParamSpec& spec : h3_parameters(config)) {
    const auto [key, shape] = stored_key_and_shape(layout, spec, config);
    const weights::TensorInfo* info = ckpt.info(key);
    if (info == nullptr) continue;  // check_checkpoint_keys names the missing keys
    OROCHI_RETURN_IF_ERROR(check_stored(key, info->shape, info->dtype, shape));
  }
  return Status::ok();
}

Expected<Tensor> read_parameter(const weights::Checkpoint& ckpt, const KeyLayout& layout,
                                const ParamSpec& spec, const H3Config& config, bool as_stored) {
  if (layout.flavor == KeyFlavor::kDiffusers) return read_checked(ckpt, layout.prefix + spec.name, spec.shape, as_stored);

  const int part = qkv_part(spec.name);
  if (part >= 0) {
    // Fused [heads x (q | k | v) x head_dim, in]: take this part's head_dim rows of every head.
    const int64_t heads = config.num_attention_heads, hd = config.attention_head_dim, in = spec.shape[1];
    OROCHI_ASSIGN_OR_RETURN(Tensor fused, read_checked(ckpt, layout.prefix + fused_qkv_key(spec.name),
                                                       {3 * heads * hd, in}, as_stored));
    fused = fused.contiguous();
    const size_t rows = static_cast<size_t>(hd * in) * dtype_size(fused.dtype());  // one head's part
    Tensor out = Tensor::uninitialized(spec.shape, fused.dtype());
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(static_cast<char*>(out.raw_data()) + h * rows,
                  static_cast<const char*>(fused.raw_data()) + (h * 3 + part) * rows, rows);
    return out;
  }
  OROCHI_ASSIGN_OR_RETURN(Tensor t, read_checked(ckpt, layout.prefix + original_key(spec.name), spec.shape, as_stored));
  if (spec.name.find(".ff.net.0.proj.") != std::string::npos) {
    // Original fc1 rows are [gate; value]; diffusers' SwiGLU reads [value; gate].
    t = t.contiguous();
    const size_t half = static_cast<size_t>(spec.shape[0] / 2 * spec.shape[1]) * dtype_size(t.dtype());
    Tensor swapped = Tensor::uninitialized(spec.shape, t.dtype());
    std::memcpy(swapped.raw_data(), static_cast<const char*>(t.raw_data()) + half, half);
    std::memcpy(static_cast<char*>(swapped.raw_data()) + half, t.raw_data(), half);
    return swapped;
  }
  return t;
}

}  // namespace orochi::h3
