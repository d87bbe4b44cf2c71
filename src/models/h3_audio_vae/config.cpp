#include "models/h3_audio_vae/config.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace orochi::h3_audio {
namespace {

constexpr int64_t kMaxSize = int64_t{1} << 24;

Status read_int(const nlohmann::json& j, const char* key, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number_integer()) return invalid_argument(std::string("config.json: '") + key + "' must be an integer");
  out = it->get<int64_t>();
  return Status::ok();
}

// A JSON list of integers; `what` names it in the error.
Status parse_int_list(const nlohmann::json& v, const std::string& what, std::vector<int64_t>& out) {
  if (!v.is_array()) return invalid_argument("config.json: '" + what + "' must be a list of integers");
  out.clear();
  for (const auto& x : v) {
    if (!x.is_number_integer()) return invalid_argument("config.json: '" + what + "' must be a list of integers");
    out.push_back(x.get<int64_t>());
  }
  return Status::ok();
}

Status read_int_list(const nlohmann::json& j, const char* key, std::vector<int64_t>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  return parse_int_list(*it, key, out);
}

Status read_float_list(const nlohmann::json& j, const char* key, std::vector<float>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_array()) return invalid_argument(std::string("config.json: '") + key + "' must be a list of numbers");
  out.clear();
  for (const auto& v : *it) {
    if (!v.is_number()) return invalid_argument(std::string("config.json: '") + key + "' must be a list of numbers");
    out.push_back(v.get<float>());
  }
  return Status::ok();
}

std::string str(int64_t v) { return std::to_string(v); }

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

int64_t AudioVaeConfig::hop_length() const { return product(decoder_rates); }
int64_t AudioVaeConfig::encoder_hop_length() const { return product(encoder_rates); }

Status AudioVaeConfig::validate_encoder() const {
  OROCHI_RETURN_IF_ERROR(validate());
  if (encoder_rates.empty() || encoder_rates.size() > 16)
    return invalid_argument("encoder_rates must list 1 to 16 rates");
  for (int64_t rate : encoder_rates)
    if (rate < 2)
      return unsupported("encoder rate " + str(rate) +
                         ": a block's strided conv (kernel 2·rate, padding ceil(rate/2)) "
                         "divides the length by its rate only for rates >= 2");
  if ((encoder_dim << encoder_rates.size()) > kMaxSize)
    return invalid_argument("encoder_dim (" + str(encoder_dim) + ") doubled " + str(num_encoder_blocks()) +
                            " times exceeds 2^24 channels");
  if (latent_dim % num_attention_heads != 0)
    return invalid_argument("latent_dim (" + str(latent_dim) + ") must split into num_attention_heads (" +
                            str(num_attention_heads) + ") equal heads for the encoder's attention");
  return Status::ok();
}

Status AudioVaeConfig::validate() const {
  for (int64_t v : {encoder_dim, latent_dim, latent_channels, num_attention_heads, decoder_dim, sampling_rate})
    if (v <= 0 || v > kMaxSize)
      return invalid_argument("every size must be a positive integer below 2^24, got " + str(v));
  if (decoder_rates.empty() || decoder_rates.size() > 16)
    return invalid_argument("decoder_rates must list 1 to 16 rates");
  for (const auto* list : {&encoder_rates, &decoder_rates, &decoder_kernel_sizes, &resblock_kernel_sizes})
    for (int64_t v : *list)
      if (v <= 0 || v > 1024) return invalid_argument("rates and kernel sizes must be in [1, 1024], got " + str(v));
  if (product(encoder_rates) != hop_length())
    return invalid_argument("decoder_rates must upsample by the encoder hop length " + str(product(encoder_rates)) +
                            ", got " + str(hop_length()));
  if (latent_dim % latent_channels != 0)
    return invalid_argument("latent_dim (" + str(latent_dim) + ") must be a multiple of latent_channels (" +
                            str(latent_channels) + ")");
  if (decoder_kernel_sizes.size() != decoder_rates.size())
    return invalid_argument("decoder_kernel_sizes needs one kernel per decoder rate");
  for (size_t i = 0; i < decoder_rates.size(); ++i)
    if (decoder_kernel_sizes[i] < decoder_rates[i] || (decoder_kernel_sizes[i] - decoder_rates[i]) % 2 != 0)
      return unsupported("upsampler " + str(static_cast<int64_t>(i)) + ": kernel " + str(decoder_kernel_sizes[i]) +
                         " minus rate " + str(decoder_rates[i]) +
                         " must be even and >= 0, or the stage would not output rate x its input length");
  if (decoder_dim % (int64_t{1} << decoder_rates.size()) != 0)
    return invalid_argument("decoder_dim (" + str(decoder_dim) + ") must stay an integer after halving " +
                            str(num_stages()) + " times");
  if (resblock_kernel_sizes.empty() || resblock_dilation_sizes.size() != resblock_kernel_sizes.size())
    return invalid_argument("resblock_dilation_sizes needs one dilation list per resblock kernel size");
  for (int64_t k : resblock_kernel_sizes)
    if (k % 2 == 0) return unsupported("AMP block kernel sizes must be odd (length-preserving), got " + str(k));
  for (const auto& dilations : resblock_dilation_sizes) {
    if (dilations.empty()) return invalid_argument("every AMP block needs at least one dilation");
    for (int64_t d : dilations)
      if (d <= 0 || d > 1024) return invalid_argument("dilations must be in [1, 1024], got " + str(d));
  }
  for (const auto* stats : {&latents_mean, &latents_std}) {
    if (!stats->empty() && static_cast<int64_t>(stats->size()) != latent_channels)
      return invalid_argument("latents_mean and latents_std need latent_channels (" + str(latent_channels) +
                              ") values, got " + str(static_cast<int64_t>(stats->size())));
    for (float v : *stats)
      if (!std::isfinite(v)) return invalid_argument("latents_mean / latents_std hold a non-finite value");
  }
  return Status::ok();
}

Expected<AudioVaeConfig> AudioVaeConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("config.json must hold a JSON object");
  if (auto it = j.find("_class_name"); it != j.end() && it->is_string() && *it != "AutoencoderKLMiniMaxH3Audio")
    return invalid_argument("config.json describes a '" + it->get<std::string>() +
                            "', not an AutoencoderKLMiniMaxH3Audio: point at the audio_vae/ folder");
  AudioVaeConfig c;
  OROCHI_RETURN_IF_ERROR(read_int(j, "encoder_dim", c.encoder_dim));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "encoder_rates", c.encoder_rates));
  OROCHI_RETURN_IF_ERROR(read_int(j, "latent_dim", c.latent_dim));
  OROCHI_RETURN_IF_ERROR(read_int(j, "latent_channels", c.latent_channels));
  OROCHI_RETURN_IF_ERROR(read_int(j, "num_attention_heads", c.num_attention_heads));
  OROCHI_RETURN_IF_ERROR(read_int(j, "decoder_dim", c.decoder_dim));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "decoder_rates", c.decoder_rates));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "decoder_kernel_sizes", c.decoder_kernel_sizes));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "resblock_kernel_sizes", c.resblock_kernel_sizes));
  OROCHI_RETURN_IF_ERROR(read_int(j, "sampling_rate", c.sampling_rate));
  if (auto it = j.find("resblock_dilation_sizes"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_argument("config.json: 'resblock_dilation_sizes' must be a list of lists");
    c.resblock_dilation_sizes.clear();
    for (const auto& inner : *it) {
      std::vector<int64_t> dilations;
      OROCHI_RETURN_IF_ERROR(parse_int_list(inner, "resblock_dilation_sizes", dilations));
      c.resblock_dilation_sizes.push_back(std::move(dilations));
    }
  }
  OROCHI_RETURN_IF_ERROR(read_float_list(j, "latents_mean", c.latents_mean));
  OROCHI_RETURN_IF_ERROR(read_float_list(j, "latents_std", c.latents_std));
  OROCHI_RETURN_IF_ERROR(c.validate().with_context("audio VAE config.json"));
  return c;
}

}  // namespace orochi::h3_audio
