#include "models/h3_audio_vae/encoder_weights.h"

#include <cstring>

#include "core/log.h"
#include "models/h3_audio_vae/parameters.h"
#include "weights/model_folder.h"
#include "weights/parameter_collector.h"

namespace orochi::h3_audio {
namespace {

// The encoder's checkpoint tensors by name, assembled into its layers.
class Collector : public weights::ParameterCollector<TensorSpec> {
 public:
  Collector(const TensorSource& source, const AudioVaeConfig& config, AudioVaeNaming naming)
      : ParameterCollector(source, naming == AudioVaeNaming::kFolded ? folded_tensors(encoder_tensors(config))
                                                                     : encoder_tensors(config)),
        folded_(naming == AudioVaeNaming::kFolded) {}

  ConvWeights normed_conv(const std::string& prefix) {
    ConvWeights c;
    if (folded_) {
      c.weight = take(prefix + ".weight");
    } else {
      Tensor g = take(prefix + ".weight_g"), v = take(prefix + ".weight_v");
      if (ok()) c.weight = fold_weight_norm(g, v);
    }
    c.bias = take(prefix + ".bias");
    return c;
  }
  // Snake's alpha is stored [1, C, 1]; the ops take [C].
  Tensor alpha(const std::string& prefix) {
    Tensor a = take(prefix + ".alpha");
    return ok() ? a.view({a.numel()}) : a;
  }
  LayerNormWeights norm(const std::string& prefix) { return {take(prefix + ".weight"), take(prefix + ".bias")}; }
  LinearWeights linear(const std::string& prefix) { return {take(prefix + ".weight"), take(prefix + ".bias")}; }

 private:
  bool folded_;
};

// The reference builds the qkv bias per call as cat(q_bias, zero_k_bias, v_bias); once at load here.
Tensor concat_qkv_bias(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t n = q.numel();
  Tensor out = Tensor::empty({3 * n}, DType::kF32);
  float* p = out.data<float>();
  std::memcpy(p, q.data<float>(), n * sizeof(float));
  std::memcpy(p + n, k.data<float>(), n * sizeof(float));
  std::memcpy(p + 2 * n, v.data<float>(), n * sizeof(float));
  return out;
}

bool is_log_std_head(const std::string& name) { return name.rfind("logs_proj.", 0) == 0; }

}  // namespace

Expected<AudioEncoderWeights> assemble_encoder(const AudioVaeConfig& config, const TensorSource& source,
                                               AudioVaeNaming naming) {
  OROCHI_RETURN_IF_ERROR(config.validate_encoder());
  Collector c(source, config, naming);
  AudioEncoderWeights w;
  w.config = config;
  const int64_t n = config.num_encoder_blocks();
  w.conv_in = c.normed_conv("encoder.block.0");
  for (int64_t i = 0; i < n; ++i) {
    const std::string block = "encoder.block." + std::to_string(i + 1) + ".block.";
    EncoderBlockWeights b;
    b.stride = config.encoder_rates[i];
    for (int64_t u = 0; u < kEncoderResidualUnits; ++u) {
      const std::string unit = block + std::to_string(u) + ".block.";
      ResidualUnitWeights r;
      r.dilation = kEncoderDilations[u];
      r.alpha1 = c.alpha(unit + "0");
      r.conv1 = c.normed_conv(unit + "1");
      r.alpha2 = c.alpha(unit + "2");
      r.conv2 = c.normed_conv(unit + "3");
      b.units.push_back(std::move(r));
    }
    b.alpha = c.alpha(block + std::to_string(kEncoderResidualUnits));
    b.down = c.normed_conv(block + std::to_string(kEncoderResidualUnits + 1));
    w.blocks.push_back(std::move(b));
  }
  w.alpha_out = c.alpha("encoder.block." + std::to_string(n + 1));
  w.conv_out = c.normed_conv("encoder.block." + std::to_string(n + 2));

  PreBlockWeights& p = w.pre_block;
  p.num_heads = config.num_attention_heads;
  p.norm1 = c.norm("pre_block.norm1");
  p.norm2 = c.norm("pre_block.norm2");
  p.norm3 = c.norm("pre_block.norm3");
  p.mlp_norm = c.norm("pre_block.mlp.norm");
  p.qkv_weight = c.take("pre_block.attn.qkv.weight");
  const Tensor q_bias = c.take("pre_block.attn.q_bias"), k_bias = c.take("pre_block.attn.zero_k_bias"),
               v_bias = c.take("pre_block.attn.v_bias");
  if (c.ok()) p.qkv_bias = concat_qkv_bias(q_bias, k_bias, v_bias);
  p.attn_proj = c.linear("pre_block.attn.proj");
  p.proj = c.linear("pre_block.proj");
  p.w0 = c.linear("pre_block.mlp.w0");
  p.w1 = c.linear("pre_block.mlp.w1");
  p.w2 = c.linear("pre_block.mlp.w2");
  w.mean_proj = {c.take("mean_proj.weight"), c.take("mean_proj.bias")};
  if (!c.status().is_ok()) return c.status();
  return w;
}

Expected<AudioEncoderWeights> load_encoder(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const AudioVaeComponent vae, open_audio_vae(path));
  OROCHI_RETURN_IF_ERROR(vae.config.validate_encoder().with_context("audio VAE config from " + vae.config_from));
  std::vector<std::string> present, expected;
  for (const std::string& name : vae.weights.names())
    if (is_encoder_tensor(name) && !is_log_std_head(name)) present.push_back(name);
  std::vector<TensorSpec> specs = encoder_tensors(vae.config);
  if (vae.naming == AudioVaeNaming::kFolded) specs = folded_tensors(specs);
  for (const TensorSpec& spec : specs) expected.push_back(spec.name);
  OROCHI_RETURN_IF_ERROR(weights::check_key_set(present, expected, "audio VAE encoder (" + vae.describe() + ")"));
  log_debug("loading audio VAE encoder from ", vae.describe());
  return assemble_encoder(vae.config, checked_source(vae.weights, vae.config_from), vae.naming);
}

}  // namespace orochi::h3_audio
