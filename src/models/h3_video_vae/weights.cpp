#include "models/h3_video_vae/weights.h"

#include <map>

#include "core/log.h"
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

Status check_keys(const weights::Checkpoint& ckpt, const VideoVaeConfig& config) {
  if (ckpt.contains("decoder.x_embedder.weight"))
    return unsupported("'" + ckpt.path() + "' uses the original release's names (decoder.x_embedder, fused "
                       "to_qkv); convert it with diffusers' MiniMax-H3 converter and pass its vae/ folder");
  std::vector<std::string> present, expected;
  for (const std::string& name : ckpt.names())
    if (!is_encoder_key(name)) present.push_back(name);  // decode only: the encoder half is skipped
  for (const ParamSpec& spec : decoder_parameters(config)) expected.push_back(spec.name);
  return weights::check_key_set(present, expected, "video VAE checkpoint '" + ckpt.path() + "'");
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

Expected<DecoderWeights> load_decoder_weights(const std::string& folder) {
  OROCHI_ASSIGN_OR_RETURN(weights::ModelFolder model, weights::ModelFolder::open(folder));
  OROCHI_ASSIGN_OR_RETURN(VideoVaeConfig config, VideoVaeConfig::from_json(model.config));
  OROCHI_RETURN_IF_ERROR(check_keys(model.weights, config));
  log_debug("loading video VAE decoder from ", folder);
  return assemble_decoder_weights(config, [&](const ParamSpec& spec) { return read_parameter_f32(model.weights, spec); });
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
