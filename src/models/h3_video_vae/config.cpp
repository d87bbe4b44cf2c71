#include "models/h3_video_vae/config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace orochi::h3vae {
namespace {

template <typename T>
Status read_number(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number()) return invalid_argument(std::string("config.json: '") + key + "' must be a number");
  out = it->get<T>();
  return Status::ok();
}

// The product of an integer list such as spatial_downsample_factors [2, 2, 2, 2, 1, 1].
Status read_factor_product(const nlohmann::json& j, const char* key, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_array() || it->empty())
    return invalid_argument(std::string("config.json: '") + key + "' must be a non-empty list of integers");
  int64_t product = 1;
  for (const auto& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 64)
      return invalid_argument(std::string("config.json: '") + key + "' must hold integers in [1, 64]");
    product *= v.get<int64_t>();
    if (product > 4096) return invalid_argument(std::string("config.json: '") + key + "' multiplies past 4096");
  }
  out = product;
  return Status::ok();
}

Status read_floats(const nlohmann::json& j, const char* key, std::vector<float>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_array()) return invalid_argument(std::string("config.json: '") + key + "' must be a list of numbers");
  out.clear();
  for (const auto& v : *it) {
    if (!v.is_number()) return invalid_argument(std::string("config.json: '") + key + "' must hold numbers");
    // torch.tensor(list) makes fp32 from the Python floats: round the same way.
    out.push_back(static_cast<float>(v.get<double>()));
  }
  return Status::ok();
}

// A list of small positive integers such as block_out_channels [128, 256, ...].
Status read_int_list(const nlohmann::json& j, const char* key, std::vector<int64_t>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_array() || it->empty())
    return invalid_argument(std::string("config.json: '") + key + "' must be a non-empty list of integers");
  out.clear();
  for (const auto& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 20))
      return invalid_argument(std::string("config.json: '") + key + "' must hold integers in [1, 2^20]");
    out.push_back(v.get<int64_t>());
  }
  return Status::ok();
}

int64_t floor_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

}  // namespace

int64_t VideoVaeConfig::rope_dim() const {
  // Python's int(head_dim * ratio) truncates the double product.
  return static_cast<int64_t>(static_cast<double>(decoder_attention_head_dim) * decoder_rope_dim_ratio);
}

int64_t VideoVaeConfig::frame_pre_padding() const { return floor_mod(-clip_length, temporal_ratio); }
int64_t VideoVaeConfig::tokens_chunk() const { return (clip_length + temporal_ratio - 1) / temporal_ratio; }
int64_t VideoVaeConfig::token_overlap() const { return floor_mod(-token_drop, tokens_chunk()); }
int64_t VideoVaeConfig::frame_overlap() const {
  return std::max<int64_t>(token_overlap() * temporal_ratio - frame_pre_padding(), 0);
}

Expected<VideoVaeConfig> VideoVaeConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("config.json must hold a JSON object");
  if (auto it = j.find("_class_name"); it != j.end() && it->is_string() && *it != "AutoencoderKLMiniMaxH3")
    return invalid_argument("config.json describes a '" + it->get<std::string>() +
                            "', not an AutoencoderKLMiniMaxH3: point at the pipeline's vae/ folder");
  VideoVaeConfig c;
  OROCHI_RETURN_IF_ERROR(read_number(j, "latent_channels", c.latent_channels));
  OROCHI_RETURN_IF_ERROR(read_number(j, "out_channels", c.out_channels));
  OROCHI_RETURN_IF_ERROR(read_factor_product(j, "spatial_downsample_factors", c.spatial_ratio));
  OROCHI_RETURN_IF_ERROR(read_factor_product(j, "temporal_downsample_factors", c.temporal_ratio));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "spatial_downsample_factors", c.spatial_downsample_factors));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "temporal_downsample_factors", c.temporal_downsample_factors));
  OROCHI_RETURN_IF_ERROR(read_int_list(j, "block_out_channels", c.block_out_channels));
  OROCHI_RETURN_IF_ERROR(read_number(j, "in_channels", c.in_channels));
  OROCHI_RETURN_IF_ERROR(read_number(j, "layers_per_block", c.layers_per_block));
  OROCHI_RETURN_IF_ERROR(read_number(j, "norm_num_groups", c.norm_num_groups));
  OROCHI_RETURN_IF_ERROR(read_number(j, "norm_eps", c.norm_eps));
  if (auto it = j.find("spatial_padding_mode"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_argument("config.json: 'spatial_padding_mode' must be a string");
    c.spatial_padding_mode = it->get<std::string>();
  }
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_num_layers", c.decoder_num_layers));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_num_attention_heads", c.decoder_num_attention_heads));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_attention_head_dim", c.decoder_attention_head_dim));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_num_register_tokens", c.decoder_num_register_tokens));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_ffn_mult", c.decoder_ffn_mult));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_rope_theta", c.decoder_rope_theta));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_rope_dim_ratio", c.decoder_rope_dim_ratio));
  OROCHI_RETURN_IF_ERROR(read_number(j, "decoder_norm_eps", c.decoder_norm_eps));
  OROCHI_RETURN_IF_ERROR(read_number(j, "clip_length", c.clip_length));
  OROCHI_RETURN_IF_ERROR(read_number(j, "token_drop", c.token_drop));
  OROCHI_RETURN_IF_ERROR(read_floats(j, "latents_mean", c.latents_mean));
  OROCHI_RETURN_IF_ERROR(read_floats(j, "latents_std", c.latents_std));
  OROCHI_RETURN_IF_ERROR(c.validate().with_context("vae config.json"));
  return c;
}

Status VideoVaeConfig::validate() const {
  const int64_t positive[] = {latent_channels, out_channels, spatial_ratio, temporal_ratio,
                              decoder_num_layers, decoder_num_attention_heads, decoder_attention_head_dim,
                              decoder_ffn_mult, clip_length};
  for (int64_t v : positive)
    if (v <= 0 || v > (int64_t{1} << 20))
      return invalid_argument("every size must be a positive integer below 2^20, got " + std::to_string(v));
  if (decoder_num_register_tokens < 0 || decoder_num_register_tokens > 4096)
    return invalid_argument("decoder_num_register_tokens must be in [0, 4096]");
  if (dim() > (int64_t{1} << 20)) return invalid_argument("decoder width heads x head_dim is too large");
  const int64_t r = rope_dim();
  if (r < 6 || r % 6 != 0 || r > decoder_attention_head_dim)
    return invalid_argument("int(decoder_attention_head_dim x decoder_rope_dim_ratio) = " + std::to_string(r) +
                            " must be a positive multiple of 6 (3 axes x rotate-half) within the head");
  // The reference builds inv_freq with arange(0, 1, 6 / rope_dim); its length must be rope_dim / 6.
  if (static_cast<int64_t>(std::ceil(1.0 / (6.0 / static_cast<double>(r)))) != r / 6)
    return unsupported("a rope dim of " + std::to_string(r) + ": the reference's arange(0, 1, 6 / rope_dim) "
                       "would not give rope_dim / 6 frequencies; pick another head_dim x rope ratio");
  if (!(decoder_norm_eps > 0 && decoder_rope_theta > 0))
    return invalid_argument("decoder_norm_eps and decoder_rope_theta must be > 0");
  if (token_drop < 0 || token_drop >= tokens_chunk())
    return invalid_argument("token_drop must be in [0, ceil(clip_length / temporal ratio)) = [0, " +
                            std::to_string(tokens_chunk()) + ")");
  if (token_drop > 0 && frame_overlap() == 0)
    return unsupported("this clip_length / token_drop pair leaves no frames to cross-fade between chunks");
  if (static_cast<int64_t>(latents_mean.size()) != latent_channels ||
      static_cast<int64_t>(latents_std.size()) != latent_channels)
    return invalid_argument("latents_mean and latents_std must hold latent_channels (" +
                            std::to_string(latent_channels) + ") values each, got " +
                            std::to_string(latents_mean.size()) + " and " + std::to_string(latents_std.size()));
  return Status::ok();
}

Status VideoVaeConfig::validate_encoder() const {
  const size_t levels = block_out_channels.size();
  if (levels == 0 || spatial_downsample_factors.size() != levels || temporal_downsample_factors.size() != levels)
    return invalid_argument("block_out_channels, spatial_downsample_factors and temporal_downsample_factors must "
                            "have one entry per encoder level, got " + std::to_string(levels) + ", " +
                            std::to_string(spatial_downsample_factors.size()) + " and " +
                            std::to_string(temporal_downsample_factors.size()));
  if (in_channels < 1 || in_channels > 64) return invalid_argument("in_channels must be in [1, 64]");
  if (layers_per_block < 1 || layers_per_block > 64) return invalid_argument("layers_per_block must be in [1, 64]");
  if (norm_num_groups < 1) return invalid_argument("norm_num_groups must be positive");
  for (int64_t ch : block_out_channels)
    if (ch % norm_num_groups != 0)
      return invalid_argument("every block_out_channels entry must be a multiple of norm_num_groups (" +
                              std::to_string(norm_num_groups) + "), got " + std::to_string(ch));
  if (!(norm_eps > 0)) return invalid_argument("norm_eps must be > 0");
  for (size_t i = 0; i < levels; ++i)
    if (spatial_downsample_factors[i] > 2 || (spatial_downsample_factors[i] == 1 && temporal_downsample_factors[i] > 1))
      return unsupported("encoder level " + std::to_string(i) + " has factors (spatial " +
                         std::to_string(spatial_downsample_factors[i]) + ", temporal " +
                         std::to_string(temporal_downsample_factors[i]) +
                         "): the encoder implements spatial factors 1 and 2, and temporal ones only with spatial 2 "
                         "(a downsampler without spatial stride would shrink the frame, as the reference's does)");
  if (spatial_padding_mode != "reflect")
    return unsupported("spatial_padding_mode '" + spatial_padding_mode +
                       "': the encoder implements the released model's 'reflect' only");
  return Status::ok();
}

std::string VideoVaeConfig::summary() const {
  std::ostringstream os;
  os << "  ViT decoder: " << decoder_num_layers << " blocks, " << decoder_num_attention_heads << " heads x "
     << decoder_attention_head_dim << " (dim " << dim() << "), SwiGLU " << ffn_inner() << ", "
     << decoder_num_register_tokens << " registers, RoPE on " << rope_dim() << " channels\n"
     << "  latents " << latent_channels << " ch -> " << out_channels << " ch, patch " << temporal_ratio << "x"
     << spatial_ratio << "x" << spatial_ratio << "\n"
     << "  temporal chunks: " << tokens_chunk() << " latents + " << token_overlap() << " context -> "
     << clip_length << " frames, cross-fade " << frame_overlap() << "\n";
  return os.str();
}

}  // namespace orochi::h3vae
