#include "models/h3_audio_vae/checkpoint_naming.h"

#include <algorithm>
#include <cmath>

#include "weights/component_source.h"

namespace orochi::h3_audio {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Expected<std::vector<float>> read_vector(const weights::Checkpoint& ckpt, const std::string& key, int64_t n) {
  OROCHI_ASSIGN_OR_RETURN(Tensor t, ckpt.get(key));
  if (t.shape() != Shape{n} || !dtype_is_float(t.dtype()))
    return shape_mismatch(key + " in " + ckpt.path() + " is " + t.describe() + ", expected a float [" +
                          std::to_string(n) + "] (one per latent channel)");
  const Tensor f = t.to(DType::kF32).contiguous();
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

}  // namespace

const char* audio_vae_naming_name(AudioVaeNaming naming) {
  return naming == AudioVaeNaming::kWeightNorm ? "original / diffusers (weight norm)" : "ComfyUI (weight norm folded)";
}

Expected<AudioVaeNaming> detect_audio_vae_naming(const weights::Checkpoint& ckpt) {
  for (const char* conv : {"decoder.conv_pre", "encoder.block.0"}) {
    const bool normed = ckpt.contains(std::string(conv) + ".weight_v");
    const bool folded = ckpt.contains(std::string(conv) + ".weight");
    if (normed != folded) return normed ? AudioVaeNaming::kWeightNorm : AudioVaeNaming::kFolded;
  }
  return invalid_argument(ckpt.path() + " is not a MiniMax-H3 audio VAE: no decoder.conv_pre.weight_v (original, "
                          "diffusers) or decoder.conv_pre.weight (ComfyUI), nor the encoder's first convolution; "
                          "its keys: " + weights::first_keys(ckpt));
}

std::vector<TensorSpec> folded_tensors(const std::vector<TensorSpec>& specs) {
  std::vector<TensorSpec> out;
  for (const TensorSpec& spec : specs) {
    if (ends_with(spec.name, ".weight_g")) continue;
    if (ends_with(spec.name, ".weight_v"))
      out.push_back({spec.name.substr(0, spec.name.size() - 2), spec.shape});
    else
      out.push_back(spec);
  }
  return out;
}

bool is_latents_key(const std::string& name) { return name == "latents_mean" || name == "latents_std"; }

Status take_file_latents(const weights::Checkpoint& ckpt, AudioVaeConfig& config, const std::string& what) {
  if (!ckpt.contains("latents_mean") && !ckpt.contains("latents_std")) return Status::ok();
  OROCHI_ASSIGN_OR_RETURN(const std::vector<float> mean, read_vector(ckpt, "latents_mean", config.latent_channels));
  OROCHI_ASSIGN_OR_RETURN(const std::vector<float> stdev, read_vector(ckpt, "latents_std", config.latent_channels));
  if (!config.latents_mean.empty() || !config.latents_std.empty()) {
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(a[i] - b[i]) > 1e-3f * std::max(1.0f, std::fabs(b[i]))) return false;
      return true;
    };
    if (!same(mean, config.latents_mean) || !same(stdev, config.latents_std))
      return invalid_argument(what + ": its latents_mean / latents_std differ from those of the config.json beside "
                              "it; the config belongs to another model");
    return Status::ok();
  }
  config.latents_mean = mean;
  config.latents_std = stdev;
  return Status::ok();
}

}  // namespace orochi::h3_audio
