#include "models/h3_video_vae/release_folder.h"

#include <filesystem>
#include <vector>

#include "weights/model_folder.h"

namespace orochi::h3vae {
namespace {

namespace fs = std::filesystem;

std::string class_name(const nlohmann::json& j) {
  auto it = j.find("_class_name");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// Reads `key` of `from` into `out` when present, checking it is a number (or a list, a string, a
// bool, as `out` already is); errors name `file` and the key.
class Fields {
 public:
  Fields(const nlohmann::json& j, std::string file) : j_(j), file_(std::move(file)) {}
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  Status copy(const char* key, nlohmann::json& out, const char* as, nlohmann::json::value_t type) const {
    if (!has(key)) return Status::ok();
    const nlohmann::json& v = j_.at(key);
    const bool number = type == nlohmann::json::value_t::number_float;
    if (number ? !v.is_number() : v.type() != type && !(type == nlohmann::json::value_t::number_integer && v.is_number_unsigned()))
      return invalid_argument(file_ + ": '" + key + "' has the wrong type (" + v.dump() + ")");
    out[as] = v;
    return Status::ok();
  }
  // A setting the engine implements one way only: absent (the release's code default) or `want`.
  Status require(const char* key, const nlohmann::json& want, const nlohmann::json& fallback) const {
    const nlohmann::json v = has(key) ? j_.at(key) : fallback;
    if (v != want)
      return unsupported(file_ + ": " + key + " " + v.dump() + " is a video VAE variant the engine does not run (the "
                         "release has " + want.dump() + ")");
    return Status::ok();
  }
  const nlohmann::json& json() const { return j_; }

 private:
  const nlohmann::json& j_;
  std::string file_;
};

constexpr auto kInt = nlohmann::json::value_t::number_integer;
constexpr auto kNumber = nlohmann::json::value_t::number_float;
constexpr auto kList = nlohmann::json::value_t::array;
constexpr auto kString = nlohmann::json::value_t::string;

}  // namespace

bool is_release_vae_folder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return false;
  Expected<nlohmann::json> j = weights::read_json_object((fs::path(folder) / "config.json").string(), "");
  return j && class_name(*j) == "MiniMaxH3VideoVAE";
}

Expected<ReleaseVaeFolder> read_release_vae_folder(const std::string& folder) {
  const fs::path wrapper_file = fs::path(folder) / "config.json";
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json wrapper,
                          weights::read_json_object(wrapper_file.string(), "the release's video_vae/ wrapper config"));
  if (class_name(wrapper) != "MiniMaxH3VideoVAE")
    return invalid_argument(wrapper_file.string() + " is not a MiniMaxH3VideoVAE wrapper config");
  const Fields w(wrapper, wrapper_file.string());
  std::string source_path = "source", weights_name = "model.safetensors";
  for (auto [key, out] : {std::pair{"source_path", &source_path}, std::pair{"source_safetensors_path", &weights_name}})
    if (w.has(key)) {
      if (!wrapper.at(key).is_string()) return invalid_argument(wrapper_file.string() + ": '" + key + "' must be a string");
      *out = wrapper.at(key).get<std::string>();
    }
  const fs::path source_dir = fs::path(folder) / source_path;
  const fs::path source_file = source_dir / "config.json";
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json source,
                          weights::read_json_object(source_file.string(),
                                                    "the release's video_vae/ keeps the autoencoder's config (class "
                                                    "AutoencoderKLLegacy) and weights in " + source_path + "/"));
  const Fields s(source, source_file.string());

  nlohmann::json c = {{"_class_name", "AutoencoderKLMiniMaxH3"}};
  // The variant the engine implements: 3-D causal CNN encoder, non-causal ViT decoder, ImageNet pixels.
  OROCHI_RETURN_IF_ERROR(s.require("use_3d_conv", true, false));
  OROCHI_RETURN_IF_ERROR(s.require("use_vit_decoder", true, false));
  OROCHI_RETURN_IF_ERROR(s.require("causal_encoder", true, true));
  OROCHI_RETURN_IF_ERROR(s.require("causal_decoder", false, true));
  OROCHI_RETURN_IF_ERROR(s.require("use_t_isolated_gn", true, false));
  OROCHI_RETURN_IF_ERROR(s.require("pixel_norm_type", "imagenet", "imagenet"));
  OROCHI_RETURN_IF_ERROR(s.copy("in_channels", c, "in_channels", kInt));
  OROCHI_RETURN_IF_ERROR(s.copy("out_ch", c, "out_channels", kInt));
  OROCHI_RETURN_IF_ERROR(s.copy("embed_dim", c, "latent_channels", kInt));
  if (s.has("z_channels") && s.has("embed_dim") && source.at("z_channels") != source.at("embed_dim"))
    return unsupported(source_file.string() + ": z_channels " + source.at("z_channels").dump() + " differs from embed_dim " +
                       source.at("embed_dim").dump() + "; the engine's quant convs keep one latent width");
  if (w.has("latent_channels") && c.contains("latent_channels") && wrapper.at("latent_channels") != c["latent_channels"])
    return invalid_argument(wrapper_file.string() + ": latent_channels " + wrapper.at("latent_channels").dump() +
                            " disagrees with " + source_file.string() + "'s embed_dim " + c["latent_channels"].dump());
  OROCHI_RETURN_IF_ERROR(w.copy("latent_channels", c, "latent_channels", kInt));
  OROCHI_RETURN_IF_ERROR(s.copy("num_res_blocks", c, "layers_per_block", kInt));
  OROCHI_RETURN_IF_ERROR(s.copy("space_down", c, "spatial_downsample_factors", kList));
  OROCHI_RETURN_IF_ERROR(s.copy("time_down", c, "temporal_downsample_factors", kList));
  OROCHI_RETURN_IF_ERROR(s.copy("padding_mode", c, "spatial_padding_mode", kString));
  OROCHI_RETURN_IF_ERROR(s.copy("norm_num_groups", c, "norm_num_groups", kInt));
  OROCHI_RETURN_IF_ERROR(s.copy("norm_eps", c, "norm_eps", kNumber));
  if (s.has("ch") || s.has("ch_mult")) {
    const nlohmann::json ch = s.has("ch") ? source.at("ch") : nlohmann::json(128);
    const nlohmann::json mult = s.has("ch_mult") ? source.at("ch_mult") : nlohmann::json({1, 2, 2, 4, 4, 8});
    if (!ch.is_number_integer() || !mult.is_array())
      return invalid_argument(source_file.string() + ": 'ch' must be an integer and 'ch_mult' a list of integers");
    std::vector<int64_t> channels;
    for (const nlohmann::json& m : mult) {
      if (!m.is_number_integer()) return invalid_argument(source_file.string() + ": 'ch_mult' must hold integers");
      channels.push_back(ch.get<int64_t>() * m.get<int64_t>());
    }
    c["block_out_channels"] = channels;
  }
  if (s.has("vit_decoder_kwargs")) {
    const nlohmann::json& vit = source.at("vit_decoder_kwargs");
    if (!vit.is_object()) return invalid_argument(source_file.string() + ": 'vit_decoder_kwargs' must be an object");
    const Fields v(vit, source_file.string() + " vit_decoder_kwargs");
    OROCHI_RETURN_IF_ERROR(v.require("norm_type", "rms_norm", "layer_norm"));
    OROCHI_RETURN_IF_ERROR(v.require("qk_norm_type", "rms_norm", nullptr));
    OROCHI_RETURN_IF_ERROR(v.require("ffn_use_gated", true, false));
    OROCHI_RETURN_IF_ERROR(v.require("ffn_activation_fn", "silu", "gelu"));
    OROCHI_RETURN_IF_ERROR(v.copy("num_layers", c, "decoder_num_layers", kInt));
    OROCHI_RETURN_IF_ERROR(v.copy("heads", c, "decoder_num_attention_heads", kInt));
    OROCHI_RETURN_IF_ERROR(v.copy("dim_head", c, "decoder_attention_head_dim", kInt));
    OROCHI_RETURN_IF_ERROR(v.copy("rope_theta", c, "decoder_rope_theta", kNumber));
    OROCHI_RETURN_IF_ERROR(v.copy("rope_dim_ratio", c, "decoder_rope_dim_ratio", kNumber));
    OROCHI_RETURN_IF_ERROR(v.copy("eps", c, "decoder_norm_eps", kNumber));
    OROCHI_RETURN_IF_ERROR(v.copy("num_register_tokens", c, "decoder_num_register_tokens", kInt));
    OROCHI_RETURN_IF_ERROR(v.copy("ffn_mult", c, "decoder_ffn_mult", kInt));
  } else {
    return unsupported(source_file.string() + " has no vit_decoder_kwargs: the engine runs the release's ViT decoder");
  }
  OROCHI_RETURN_IF_ERROR(w.copy("vae_clip_length", c, "clip_length", kInt));
  OROCHI_RETURN_IF_ERROR(w.copy("vae_token_drop", c, "token_drop", kInt));
  OROCHI_RETURN_IF_ERROR(w.copy("latents_mean", c, "latents_mean", kList));
  OROCHI_RETURN_IF_ERROR(w.copy("latents_std", c, "latents_std", kList));
  // The engine's tiles (h3vae::DecodeOptions, the encoder's too) are the release's; other numbers
  // would decode a different video.
  OROCHI_RETURN_IF_ERROR(w.require("vae_tile_size", 256, 256));
  OROCHI_RETURN_IF_ERROR(w.require("vae_tile_overlap_min", 64, 64));
  if (!w.has("latents_mean") || !w.has("latents_std"))
    return invalid_argument(wrapper_file.string() + " holds no latents_mean / latents_std: the latents' per-channel "
                            "statistics cannot be guessed; restore the release's video_vae/config.json");
  ReleaseVaeFolder out;
  out.config = std::move(c);
  out.weights_file = (source_dir / weights_name).string();
  out.from = wrapper_file.string() + " + " + source_file.string();
  return out;
}

}  // namespace orochi::h3vae
