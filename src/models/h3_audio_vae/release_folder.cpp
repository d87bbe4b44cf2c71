#include "models/h3_audio_vae/release_folder.h"

#include <filesystem>

#include "weights/model_folder.h"

namespace orochi::h3_audio {
namespace {

namespace fs = std::filesystem;

std::string string_field(const nlohmann::json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

bool is_release_audio_vae_folder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return false;
  Expected<nlohmann::json> j = weights::read_json_object((fs::path(folder) / "config.json").string(), "");
  return j && string_field(*j, "_class_name", "") == "MiniMaxH3AudioVAE";
}

Expected<ReleaseAudioVaeFolder> read_release_audio_vae_folder(const std::string& folder) {
  const fs::path config_file = fs::path(folder) / "config.json";
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json config,
                          weights::read_json_object(config_file.string(), "the release's audio_vae/ config"));
  const fs::path metadata_file = fs::path(folder) / string_field(config, "source_metadata_path", "metadata.json");
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json metadata,
                          weights::read_json_object(metadata_file.string(),
                                                    "the release's audio_vae/ keeps the autoencoder's constructor "
                                                    "arguments there ({\"metadata\": {\"kwargs\": ...}})"));
  const nlohmann::json* kwargs = nullptr;
  if (auto m = metadata.find("metadata"); m != metadata.end() && m->is_object())
    if (auto k = m->find("kwargs"); k != m->end() && k->is_object()) kwargs = &*k;
  if (kwargs == nullptr) return invalid_argument(metadata_file.string() + " has no metadata.kwargs object");
  const std::string decoder_type = string_field(*kwargs, "decoder_type", "bigvgan");
  if (decoder_type != "bigvgan")
    return unsupported(metadata_file.string() + ": decoder_type '" + decoder_type + "'; the engine runs BigVGAN");
  if (auto a = kwargs->find("attn_proj"); a != kwargs->end() && *a != true)
    return unsupported(metadata_file.string() + ": attn_proj " + a->dump() + "; the engine's encoder has the attention "
                       "projection");

  nlohmann::json c = {{"_class_name", "AutoencoderKLMiniMaxH3Audio"}};
  const std::pair<const char*, const char*> names[] = {
      {"encoder_dim", "encoder_dim"},       {"encoder_rates", "encoder_rates"},
      {"latent_dim", "latent_dim"},         {"decoder_dim", "decoder_dim"},
      {"decoder_rates", "decoder_rates"},   {"vae_latent_channels", "latent_channels"},
      {"sample_rate", "sampling_rate"},     {"decoder_kernel_sizes", "decoder_kernel_sizes"},
      {"resblock_kernel_sizes", "resblock_kernel_sizes"}, {"resblock_dilation_sizes", "resblock_dilation_sizes"},
      {"num_attention_heads", "num_attention_heads"}};
  for (const auto& [original, diffusers] : names)
    if (auto it = kwargs->find(original); it != kwargs->end() && !it->is_null()) c[diffusers] = *it;
  if (auto it = config.find("latent_channels"); it != config.end() && c.contains("latent_channels") &&
                                                 *it != c["latent_channels"])
    return invalid_argument(config_file.string() + ": latent_channels " + it->dump() + " disagrees with " +
                            metadata_file.string() + "'s vae_latent_channels " + c["latent_channels"].dump());
  for (const char* key : {"latents_mean", "latents_std"}) {
    auto it = config.find(key);
    if (it == config.end() || !it->is_array())
      return invalid_argument(config_file.string() + " holds no " + key + ": the latents' per-channel statistics "
                              "cannot be guessed; restore the release's audio_vae/config.json");
    c[key] = *it;
  }
  ReleaseAudioVaeFolder out;
  out.config = std::move(c);
  out.weights_file = (fs::path(folder) / string_field(config, "source_safetensors_path", "model.safetensors")).string();
  out.from = config_file.string() + " + " + metadata_file.string();
  return out;
}

}  // namespace orochi::h3_audio
