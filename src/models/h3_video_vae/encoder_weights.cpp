#include "models/h3_video_vae/encoder_weights.h"

#include "core/log.h"
#include "weights/model_folder.h"
#include "weights/parameter_collector.h"

namespace orochi::h3vae {
namespace {

void add_conv(std::vector<ParamSpec>& out, const std::string& name, int64_t cin, int64_t cout, int64_t k) {
  out.push_back({name + ".weight", {cout, cin, k, k, k}});
  out.push_back({name + ".bias", {cout}});
}

void add_norm(std::vector<ParamSpec>& out, const std::string& name, int64_t channels) {
  out.push_back({name + ".weight", {channels}});
  out.push_back({name + ".bias", {channels}});
}

class Collector : public weights::ParameterCollector<ParamSpec> {
 public:
  Collector(const ParamSource& source, const VideoVaeConfig& config)
      : ParameterCollector(source, encoder_parameters(config)) {}
  Conv3dWeights conv(const std::string& name) { return {take(name + ".weight"), take(name + ".bias")}; }
  GroupNormWeights norm(const std::string& name) { return {take(name + ".weight"), take(name + ".bias")}; }
};

Status check_encoder_keys(const VaeComponent& vae) {
  std::vector<std::string> present, expected;
  for (const std::string& name : vae.weights.names())
    if (is_encoder_key(name)) present.push_back(name);  // the decoder's keys are its loader's business
  if (present.empty())
    return invalid_argument("video VAE checkpoint '" + vae.weights.path() +
                            "' holds no encoder.* / quant_conv.* weights: it is a decode-only export; point at "
                            "the full diffusers vae/ folder or a whole VAE file");
  const std::vector<ParamSpec> specs = encoder_parameters(vae.config);
  if (vae.naming == VaeNaming::kOriginal) {
    expected = original_keys(specs);
  } else {
    for (const ParamSpec& spec : specs) expected.push_back(spec.name);
  }
  return weights::check_key_set(present, expected, "video VAE encoder in '" + vae.weights.path() + "' (" +
                                                       vae_naming_name(vae.naming) + " names)");
}

}  // namespace

std::vector<ParamSpec> encoder_parameters(const VideoVaeConfig& c) {
  std::vector<ParamSpec> out;
  const std::vector<int64_t>& ch = c.block_out_channels;
  add_conv(out, "encoder.conv_in", c.in_channels, ch[0], 3);
  for (size_t i = 0; i < ch.size(); ++i) {
    const std::string level = "encoder.down_blocks." + std::to_string(i) + ".";
    const int64_t level_in = i == 0 ? ch[0] : ch[i - 1];
    for (int64_t j = 0; j < c.layers_per_block; ++j) {
      const std::string p = level + "resnets." + std::to_string(j) + ".";
      const int64_t in = j == 0 ? level_in : ch[i];
      add_norm(out, p + "norm1", in);
      add_conv(out, p + "conv1", in, ch[i], 3);
      add_norm(out, p + "norm2", ch[i]);
      add_conv(out, p + "conv2", ch[i], ch[i], 3);
      if (in != ch[i]) add_conv(out, p + "conv_shortcut", in, ch[i], 1);
    }
    if (c.spatial_downsample_factors[i] * c.temporal_downsample_factors[i] > 1)
      add_conv(out, level + "downsamplers.0.conv", ch[i], ch[i], 3);
  }
  add_norm(out, "encoder.norm_out", ch.back());
  add_conv(out, "encoder.conv_out", ch.back(), 2 * c.latent_channels, 3);
  add_conv(out, "quant_conv", 2 * c.latent_channels, 2 * c.latent_channels, 1);
  return out;
}

Expected<EncoderWeights> assemble_encoder_weights(const VideoVaeConfig& config, const ParamSource& source) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  OROCHI_RETURN_IF_ERROR(config.validate_encoder());
  Collector c(source, config);
  EncoderWeights w;
  w.config = config;
  w.conv_in = c.conv("encoder.conv_in");
  const std::vector<int64_t>& ch = config.block_out_channels;
  for (size_t i = 0; i < ch.size(); ++i) {
    const std::string level = "encoder.down_blocks." + std::to_string(i) + ".";
    EncoderLevelWeights lw;
    for (int64_t j = 0; j < config.layers_per_block; ++j) {
      const std::string p = level + "resnets." + std::to_string(j) + ".";
      const int64_t in = j == 0 ? (i == 0 ? ch[0] : ch[i - 1]) : ch[i];
      EncoderResnetWeights r;
      r.norm1 = c.norm(p + "norm1");
      r.conv1 = c.conv(p + "conv1");
      r.norm2 = c.norm(p + "norm2");
      r.conv2 = c.conv(p + "conv2");
      if (in != ch[i]) r.shortcut = c.conv(p + "conv_shortcut");
      lw.resnets.push_back(std::move(r));
    }
    lw.spatial_stride = config.spatial_downsample_factors[i];
    lw.temporal_stride = config.temporal_downsample_factors[i];
    if (lw.spatial_stride * lw.temporal_stride > 1) lw.downsample = c.conv(level + "downsamplers.0.conv");
    w.levels.push_back(std::move(lw));
  }
  w.norm_out = c.norm("encoder.norm_out");
  w.conv_out = c.conv("encoder.conv_out");
  w.quant_conv = c.conv("quant_conv");
  if (!c.status().is_ok()) return c.status();
  return w;
}

Expected<EncoderWeights> load_encoder_weights(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const VaeComponent vae, open_video_vae(path));
  OROCHI_RETURN_IF_ERROR(vae.config.validate_encoder().with_context("video VAE config from " + vae.config_from));
  OROCHI_RETURN_IF_ERROR(check_encoder_keys(vae));
  log_debug("loading video VAE encoder from ", vae.describe());
  return assemble_encoder_weights(vae.config, [&](const ParamSpec& spec) {
    return vae.naming == VaeNaming::kOriginal ? original_parameter(vae.weights, vae.config, spec)
                                              : read_parameter_f32(vae.weights, spec);
  });
}

}  // namespace orochi::h3vae
