#include "models/h3_video_vae/checkpoint_naming.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "weights/component_source.h"

namespace orochi::h3vae {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Replaces the first `from` in `s` by `to` (s unchanged when absent).
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// Which of q, k, v a diffusers attention parameter is (0, 1, 2), or -1.
int qkv_part(const std::string& name) {
  for (int p = 0; p < 3; ++p)
    if (name.find(std::string(".attn.to_") + "qkv"[p] + ".") != std::string::npos) return p;
  return -1;
}

// `key` of the checkpoint as f32, its shape checked; errors name the key and the file.
Expected<Tensor> read_f32(const weights::Checkpoint& ckpt, const std::string& key, const Shape& want) {
  OROCHI_ASSIGN_OR_RETURN(Tensor t, ckpt.get(key));
  if (t.shape() != want)
    return shape_mismatch(key + " is " + shape_to_string(t.shape()) + " in " + ckpt.path() + ", expected " +
                          shape_to_string(want) + " for this video VAE config: wrong model or config?");
  if (!dtype_is_float(t.dtype()))
    return shape_mismatch(key + " in " + ckpt.path() + " is " + dtype_name(t.dtype()) + ", expected a float type");
  return t.to(DType::kF32).contiguous();
}

}  // namespace

const char* vae_naming_name(VaeNaming naming) {
  return naming == VaeNaming::kDiffusers ? "diffusers" : "original (ComfyUI)";
}

Expected<VaeNaming> detect_vae_naming(const weights::Checkpoint& ckpt) {
  const bool diffusers = ckpt.contains("decoder.proj_in.weight") || ckpt.contains("encoder.down_blocks.0.resnets.0.conv1.weight");
  const bool original = ckpt.contains("decoder.x_embedder.weight") || ckpt.contains("encoder.down.0.block.0.conv1.weight");
  if (diffusers && !original) return VaeNaming::kDiffusers;
  if (original && !diffusers) return VaeNaming::kOriginal;
  return invalid_argument(ckpt.path() + " is not a MiniMax-H3 video VAE in either naming: " +
                          (diffusers ? "it holds keys of both the diffusers (decoder.proj_in) and the original "
                                       "(decoder.x_embedder) naming"
                                     : "no decoder.proj_in.weight (diffusers) or decoder.x_embedder.weight "
                                       "(original, ComfyUI) and no encoder level 0") +
                          "; its keys: " + weights::first_keys(ckpt));
}

std::string original_key(const std::string& name) {
  std::string key = name;
  if (key.starts_with("encoder.down_blocks.")) {
    key = replaced(key, "encoder.down_blocks.", "encoder.down.");
    key = replaced(key, ".resnets.", ".block.");
    key = replaced(key, ".conv_shortcut.", ".nin_shortcut.");
    key = replaced(key, ".downsamplers.0.", ".downsample.");
    return key;
  }
  key = replaced(key, "decoder.proj_in.", "decoder.x_embedder.");
  if (qkv_part(key) >= 0) {
    for (const char* part : {".attn.to_q.", ".attn.to_k.", ".attn.to_v."}) key = replaced(key, part, ".attn.to_qkv.");
    return key;
  }
  key = replaced(key, ".attn.to_out.0.", ".attn.to_out.");
  key = replaced(key, ".ff.net.0.proj.", ".ff.w1.");
  key = replaced(key, ".ff.net.2.", ".ff.w2.");
  return key;
}

bool is_extra_key(const std::string& name, VaeNaming naming) {
  return name == "latents_mean" || name == "latents_std" ||
         (naming == VaeNaming::kOriginal && name == "decoder.mask_token");
}

Expected<Tensor> original_parameter(const weights::Checkpoint& ckpt, const VideoVaeConfig& config,
                                    const ParamSpec& spec) {
  const std::string key = original_key(spec.name);
  const int part = qkv_part(spec.name);
  if (part >= 0) {
    // to_qkv [3D, D] (bias [3D]): per head h the rows [q_h; k_h; v_h], head_dim each.
    const int64_t heads = config.decoder_num_attention_heads, hd = config.decoder_attention_head_dim;
    Shape fused = spec.shape;
    fused[0] *= 3;
    OROCHI_ASSIGN_OR_RETURN(const Tensor qkv, read_f32(ckpt, key, fused));
    const int64_t row = qkv.numel() / fused[0];  // elements per row (1 for the bias)
    Tensor out = Tensor::empty(spec.shape, DType::kF32);
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(out.data<float>() + h * hd * row, qkv.data<float>() + (h * 3 + part) * hd * row,
                  static_cast<size_t>(hd * row) * sizeof(float));
    return out;
  }
  OROCHI_ASSIGN_OR_RETURN(Tensor t, read_f32(ckpt, key, spec.shape));
  if (ends_with(key, ".ff.w1.weight") || ends_with(key, ".ff.w1.bias")) {
    // w1 rows [gate; up] -> ff.net.0.proj rows [up (value); gate].
    const int64_t half = (t.numel() / spec.shape[0]) * (spec.shape[0] / 2);
    Tensor swapped = Tensor::empty(spec.shape, DType::kF32);
    std::memcpy(swapped.data<float>(), t.data<float>() + half, static_cast<size_t>(half) * sizeof(float));
    std::memcpy(swapped.data<float>() + half, t.data<float>(), static_cast<size_t>(half) * sizeof(float));
    return swapped;
  }
  return t;
}

std::vector<std::string> original_keys(const std::vector<ParamSpec>& specs) {
  std::set<std::string> keys;
  for (const ParamSpec& spec : specs) keys.insert(original_key(spec.name));
  return {keys.begin(), keys.end()};
}

Status take_file_latents(const weights::Checkpoint& ckpt, VideoVaeConfig& config, bool config_has_them,
                         const std::string& what) {
  const bool file_has_them = ckpt.contains("latents_mean") || ckpt.contains("latents_std");
  if (!file_has_them) {
    if (config_has_them) return Status::ok();
    return invalid_argument(what + " holds no latents_mean / latents_std and no config.json beside it gives them: the "
                            "latents' per-channel statistics cannot be guessed; put the model's vae/config.json "
                            "beside the file");
  }
  const Shape want = {config.latent_channels};
  OROCHI_ASSIGN_OR_RETURN(const Tensor mean, read_f32(ckpt, "latents_mean", want));
  OROCHI_ASSIGN_OR_RETURN(const Tensor stdev, read_f32(ckpt, "latents_std", want));
  const std::vector<float> file_mean(mean.data<float>(), mean.data<float>() + mean.numel());
  const std::vector<float> file_std(stdev.data<float>(), stdev.data<float>() + stdev.numel());
  if (config_has_them) {
    // A half-precision file rounds them: agreement within fp16's step is agreement.
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(a[i] - b[i]) > 1e-3f * std::max(1.0f, std::fabs(b[i]))) return false;
      return true;
    };
    if (!same(file_mean, config.latents_mean) || !same(file_std, config.latents_std))
      return invalid_argument(what + ": its latents_mean / latents_std differ from those of the config.json beside "
                              "it; the config belongs to another model");
    return Status::ok();
  }
  config.latents_mean = file_mean;
  config.latents_std = file_std;
  return Status::ok();
}

}  // namespace orochi::h3vae
