#include "models/h3_video_vae/weights.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "models/h3_video_vae/release_folder.h"
#include "weights/component_source.h"
#include "weights/model_folder.h"
#include "weights/parameter_collector.h"

namespace orochi::h3vae {
namespace {

// The decoder's parameters by their diffusers names.
class Collector : public weights::ParameterCollector<ParamSpec> {
 public:
  Collector(const ParamSource& source, const VideoVaeConfig& config)
      : ParameterCollector(source, decoder_parameters(config)) {}
  Linear linear(const std::string& name) { return {take(name + ".weight"), take(name + ".bias")}; }
};

Status check_keys(const VaeComponent& vae) {
  std::vector<std::string> present, expected;
  for (const std::string& name : vae.weights.names())
    if (!is_encoder_key(name) && !is_extra_key(name, vae.naming)) present.push_back(name);  // decode only
  const std::vector<ParamSpec> specs = decoder_parameters(vae.config);
  if (vae.naming == VaeNaming::kOriginal) {
    expected = original_keys(specs);
  } else {
    for (const ParamSpec& spec : specs) expected.push_back(spec.name);
  }
  return weights::check_key_set(present, expected,
                                "video VAE checkpoint '" + vae.weights.path() + "' (" + vae_naming_name(vae.naming) +
                                    " names, config from " + vae.config_from + ")");
}

}  // namespace

Expected<DecoderWeights> assemble_decoder_weights(const VideoVaeConfig& config, const ParamSource& source) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  Collector c(source, config);
  const int64_t C = config.latent_channels, D = config.dim();
  DecoderWeights w;
  w.config = config;
  w.post_quant_conv = c.linear("post_quant_conv");
  if (w.post_quant_conv.weight.defined()) w.post_quant_conv.weight = w.post_quant_conv.weight.view({C, C});
  w.proj_in = c.linear("decoder.proj_in");
  w.register_tokens = c.take("decoder.register_tokens");
  if (w.register_tokens.defined()) w.register_tokens = w.register_tokens.view({config.decoder_num_register_tokens, D});
  for (int64_t i = 0; i < config.decoder_num_layers; ++i) {
    const std::string p = "decoder.transformer_blocks." + std::to_string(i) + ".";
    DecoderBlockWeights b;
    b.norm1 = c.take(p + "norm1.weight");
    b.to_q = c.linear(p + "attn.to_q");
    b.to_k = c.linear(p + "attn.to_k");
    b.to_v = c.linear(p + "attn.to_v");
    b.to_out = c.linear(p + "attn.to_out.0");
    b.scale1 = c.take(p + "scale1");
    b.norm2 = c.take(p + "norm2.weight");
    b.ff_in = c.linear(p + "ff.net.0.proj");
    b.ff_out = c.linear(p + "ff.net.2");
    b.scale2 = c.take(p + "scale2");
    w.blocks.push_back(std::move(b));
  }
  w.norm_out_weight = c.take("decoder.norm_out.weight");
  w.norm_out_bias = c.take("decoder.norm_out.bias");
  w.proj_out = c.linear("decoder.proj_out");
  if (!c.status().is_ok()) return c.status();
  return w;
}

std::string VaeComponent::describe() const {
  return weights.path() + ": " + vae_naming_name(naming) + " names; config from " + config_from;
}

Expected<VaeComponent> open_video_vae(const std::string& path) {
  if (is_release_vae_folder(path)) {
    OROCHI_ASSIGN_OR_RETURN(const ReleaseVaeFolder release, read_release_vae_folder(path));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(release.weights_file, ec))
      return not_found(release.weights_file + " is missing: the release's video_vae/ keeps its fp32 weights there, "
                       "beside the autoencoder's config (" + release.from + ")");
    VaeComponent vae;
    vae.config_from = release.from;
    Expected<VideoVaeConfig> config = VideoVaeConfig::from_json(release.config);
    if (!config) return config.status().with_context(release.from);
    vae.config = std::move(config).value();
    OROCHI_ASSIGN_OR_RETURN(vae.weights, weights::Checkpoint::open(release.weights_file));
    OROCHI_ASSIGN_OR_RETURN(vae.naming, detect_vae_naming(vae.weights));
    OROCHI_RETURN_IF_ERROR(take_file_latents(vae.weights, vae.config, true, release.weights_file));
    return vae;
  }
  OROCHI_ASSIGN_OR_RETURN(weights::ComponentSource source, weights::open_component(path, "--vae"));
  VaeComponent vae;
  bool config_has_latents = false;
  vae.config_from = source.config.config ? source.config.from
                                         : std::string("the released video VAE config (latents from the file)");
  if (source.config.config) {
    nlohmann::json json = *source.config.config;
    config_has_latents = json.contains("latents_mean") || json.contains("latents_std");
    if (!config_has_latents) {
      // Placeholders of the config's width, so it validates; the file's replace them below (or the
      // file has none and is refused: never decoded with made-up statistics).
      const int64_t channels = json.value("latent_channels", vae.config.latent_channels);
      json["latents_mean"] = std::vector<float>(static_cast<size_t>(std::max<int64_t>(channels, 0)), 0.0f);
      json["latents_std"] = std::vector<float>(static_cast<size_t>(std::max<int64_t>(channels, 0)), 1.0f);
    }
    Expected<VideoVaeConfig> config = VideoVaeConfig::from_json(json);
    if (!config) return config.status().with_context(source.config.from);
    vae.config = std::move(config).value();
  }
  vae.weights = std::move(source.weights);
  OROCHI_ASSIGN_OR_RETURN(vae.naming, detect_vae_naming(vae.weights));
  if (Status s = take_file_latents(vae.weights, vae.config, config_has_latents, path); !s.is_ok())
    return Status(s.code(), s.message() + " (config from " + vae.config_from + ")");
  return vae;
}

Expected<DecoderWeights> load_decoder_weights(const VaeComponent& vae) {
  OROCHI_RETURN_IF_ERROR(check_keys(vae));
  log_debug("loading video VAE decoder from ", vae.describe());
  return assemble_decoder_weights(vae.config, [&](const ParamSpec& spec) {
    return vae.naming == VaeNaming::kOriginal ? original_parameter(vae.weights, vae.config, spec)
                                              : read_parameter_f32(vae.weights, spec);
  });
}

Expected<DecoderWeights> load_decoder_weights(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const VaeComponent vae, open_video_vae(path));
  return load_decoder_weights(vae);
}

Expected<Tensor> read_parameter_f32(const weights::Checkpoint& ckpt, const ParamSpec& spec) {
  OROCHI_ASSIGN_OR_RETURN(Tensor t, ckpt.get(spec.name));
  if (t.shape() != spec.shape)
    return shape_mismatch(spec.name + " has shape " + shape_to_string(t.shape()) + ", expected " +
                          shape_to_string(spec.shape) + " for this config.json: wrong model or config?");
  if (!dtype_is_float(t.dtype()))
    return shape_mismatch(spec.name + " is " + dtype_name(t.dtype()) + ", expected a float type");
  return t.to(DType::kF32);
}

}  // namespace orochi::h3vae
