#include "models/h3_audio_vae/weights.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "core/log.h"
#include "models/h3_audio_vae/release_folder.h"
#include "weights/component_source.h"
#include "weights/model_folder.h"
#include "weights/parameter_collector.h"

namespace orochi::h3_audio {
namespace {

// The decoder's checkpoint tensors by name, assembled into its layers.
class Collector : public weights::ParameterCollector<TensorSpec> {
 public:
  Collector(const TensorSource& source, const AudioVaeConfig& config, AudioVaeNaming naming)
      : ParameterCollector(source, naming == AudioVaeNaming::kFolded ? folded_tensors(decoder_tensors(config))
                                                                     : decoder_tensors(config)),
        folded_(naming == AudioVaeNaming::kFolded) {}
  ConvWeights plain_conv(const std::string& prefix) { return {take(prefix + ".weight"), take(prefix + ".bias")}; }
  ConvWeights normed_conv(const std::string& prefix, bool bias) {
    ConvWeights c;
    if (folded_) {
      c.weight = take(prefix + ".weight");
    } else {
      Tensor g = take(prefix + ".weight_g"), v = take(prefix + ".weight_v");
      if (ok()) c.weight = fold_weight_norm(g, v);
    }
    if (bias) c.bias = take(prefix + ".bias");
    return c;
  }
  AliasFreeSnakeWeights activation(const std::string& prefix) {
    AliasFreeSnakeWeights a;
    a.log_alpha = take(prefix + ".act.alpha");
    a.log_beta = take(prefix + ".act.beta");
    a.up_filter = take(prefix + ".upsample.filter");
    a.down_filter = take(prefix + ".downsample.lowpass.filter");
    if (ok()) {
      a.up_filter = a.up_filter.view({kAliasFreeTaps});
      a.down_filter = a.down_filter.view({kAliasFreeTaps});
    }
    return a;
  }

 private:
  bool folded_;
};

}  // namespace

Tensor fold_weight_norm(const Tensor& g, const Tensor& v) {
  OROCHI_CHECK(g.dtype() == DType::kF32 && v.dtype() == DType::kF32 && g.is_contiguous() && v.is_contiguous() &&
                   v.ndim() >= 1 && g.numel() == v.dim(0),
               "fold_weight_norm: g ", g.describe(), " does not match v ", v.describe());
  const int64_t rows = v.dim(0), width = v.numel() / std::max<int64_t>(rows, 1);
  Tensor w = Tensor::empty(v.shape(), DType::kF32);
  const float* pv = v.data<float>();
  const float* pg = g.data<float>();
  float* pw = w.data<float>();
  for (int64_t o = 0; o < rows; ++o) {
    double sum_sq = 0;
    for (int64_t i = 0; i < width; ++i) sum_sq += static_cast<double>(pv[o * width + i]) * pv[o * width + i];
    // As torch: one fp32 factor g / ‖v‖ per row, then v · factor.
    const float factor = pg[o] / static_cast<float>(std::sqrt(sum_sq));
    for (int64_t i = 0; i < width; ++i) pw[o * width + i] = pv[o * width + i] * factor;
  }
  return w;
}

Expected<AudioDecoderWeights> assemble_decoder(const AudioVaeConfig& config, const TensorSource& source,
                                               AudioVaeNaming naming) {
  OROCHI_RETURN_IF_ERROR(config.validate());
  Collector c(source, config, naming);
  AudioDecoderWeights w;
  w.config = config;
  w.dec_in_proj = c.plain_conv("dec_in_proj");
  w.conv_pre = c.normed_conv("decoder.conv_pre", true);
  const int64_t num_kernels = static_cast<int64_t>(config.resblock_kernel_sizes.size());
  for (int64_t i = 0; i < config.num_stages(); ++i) {
    UpsampleStageWeights stage;
    stage.rate = config.decoder_rates[i];
    stage.kernel = config.decoder_kernel_sizes[i];
    stage.up = c.normed_conv("decoder.ups." + std::to_string(i) + ".0", true);
    for (int64_t j = 0; j < num_kernels; ++j) {
      const std::string p = "decoder.resblocks." + std::to_string(i * num_kernels + j);
      AmpBlockWeights block;
      block.kernel = config.resblock_kernel_sizes[j];
      block.dilations = config.resblock_dilation_sizes[j];
      for (size_t d = 0; d < block.dilations.size(); ++d) {
        block.convs1.push_back(c.normed_conv(p + ".convs1." + std::to_string(d), true));
        block.convs2.push_back(c.normed_conv(p + ".convs2." + std::to_string(d), true));
      }
      for (size_t a = 0; a < 2 * block.dilations.size(); ++a)
        block.acts.push_back(c.activation(p + ".activations." + std::to_string(a)));
      stage.blocks.push_back(std::move(block));
    }
    w.stages.push_back(std::move(stage));
  }
  w.act_post = c.activation("decoder.activation_post");
  w.conv_post = c.normed_conv("decoder.conv_post", false);
  if (!c.status().is_ok()) return c.status();
  return w;
}

TensorSource checked_source(const weights::Checkpoint& ckpt, const std::string& config_from) {
  return [&ckpt, config_from](const TensorSpec& spec) -> Expected<Tensor> {
    OROCHI_ASSIGN_OR_RETURN(Tensor t, ckpt.get(spec.name));
    if (t.shape() != spec.shape)
      return shape_mismatch(spec.name + " is " + shape_to_string(t.shape()) + " in " + ckpt.path() + ", but " +
                            config_from + " implies " + shape_to_string(spec.shape) +
                            "; does the config belong to these weights?");
    if (!dtype_is_float(t.dtype()))
      return shape_mismatch(spec.name + " has dtype " + dtype_name(t.dtype()) + "; expected a float tensor");
    return t.to(DType::kF32);  // the VAE computes in f32 whatever the file stores
  };
}

TensorSource checked_folder_source(const weights::ModelFolder& model) {
  return checked_source(model.weights, "config.json");
}

std::string AudioVaeComponent::describe() const {
  return weights.path() + ": " + audio_vae_naming_name(naming) + " names; config from " + config_from;
}

Expected<AudioVaeComponent> open_audio_vae(const std::string& path) {
  if (is_release_audio_vae_folder(path)) {
    OROCHI_ASSIGN_OR_RETURN(const ReleaseAudioVaeFolder release, read_release_audio_vae_folder(path));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(release.weights_file, ec))
      return not_found(release.weights_file + " is missing: the release's audio_vae/ keeps its fp32 weights there (" +
                       release.from + ")");
    AudioVaeComponent vae;
    vae.config_from = release.from;
    Expected<AudioVaeConfig> config = AudioVaeConfig::from_json(release.config);
    if (!config) return config.status().with_context(release.from);
    vae.config = std::move(config).value();
    OROCHI_ASSIGN_OR_RETURN(vae.weights, weights::Checkpoint::open(release.weights_file));
    OROCHI_ASSIGN_OR_RETURN(vae.naming, detect_audio_vae_naming(vae.weights));
    OROCHI_RETURN_IF_ERROR(take_file_latents(vae.weights, vae.config, release.weights_file));
    return vae;
  }
  OROCHI_ASSIGN_OR_RETURN(weights::ComponentSource source, weights::open_component(path, "--audio-vae"));
  AudioVaeComponent vae;
  if (source.config.config) {
    Expected<AudioVaeConfig> config = AudioVaeConfig::from_json(*source.config.config);
    if (!config) return config.status().with_context(source.config.from);
    vae.config = std::move(config).value();
  }
  vae.config_from = source.config.config ? source.config.from
                                         : std::string("the released audio VAE config (latents from the file)");
  vae.weights = std::move(source.weights);
  OROCHI_ASSIGN_OR_RETURN(vae.naming, detect_audio_vae_naming(vae.weights));
  if (Status s = take_file_latents(vae.weights, vae.config, path); !s.is_ok())
    return Status(s.code(), s.message() + " (config from " + vae.config_from + ")");
  if (!source.config.config && (vae.config.latents_mean.empty() || vae.config.latents_std.empty()))
    return invalid_argument(path + " holds no latents_mean / latents_std and no config.json gives them: the latents' "
                            "per-channel statistics cannot be guessed; put the model's audio_vae/config.json beside "
                            "the file");
  return vae;
}

Expected<AudioDecoderWeights> load_decoder(const AudioVaeComponent& vae) {
  std::vector<std::string> present, expected;
  for (const std::string& name : vae.weights.names())
    if (!is_encoder_tensor(name) && !is_latents_key(name)) present.push_back(name);
  std::vector<TensorSpec> specs = decoder_tensors(vae.config);
  if (vae.naming == AudioVaeNaming::kFolded) specs = folded_tensors(specs);
  for (const TensorSpec& spec : specs) expected.push_back(spec.name);
  OROCHI_RETURN_IF_ERROR(weights::check_key_set(present, expected, "audio VAE decoder (" + vae.describe() + ")"));
  log_debug("loading audio VAE decoder from ", vae.describe());
  return assemble_decoder(vae.config, checked_source(vae.weights, vae.config_from), vae.naming);
}

Expected<AudioDecoderWeights> load_decoder(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const AudioVaeComponent vae, open_audio_vae(path));
  return load_decoder(vae);
}

}  // namespace orochi::h3_audio
