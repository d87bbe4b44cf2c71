#include "pipeline/t2va_models.h"

#include <cmath>
#include <filesystem>
#include <string_view>

#include "core/check.h"
#include "core/random.h"
#include "models/h3/model_folder_parts.h"
#include "models/h3_audio_vae/encoder_random.h"
#include "models/h3_video_vae/encoder_random.h"

namespace orochi::pipeline {
namespace {

// N(mean, std) from the counter-based RNG; each tensor its own stream, so adding a parameter
// never changes the others.
Tensor normal_param(const Shape& shape, uint64_t seed, uint64_t stream, float mean, float stddev) {
  Tensor t = normal_tensor(shape, seed, stream);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = mean + stddev * p[i];
  return t;
}

float inverse_sqrt_fan_in(const Shape& shape) {
  int64_t fan_in = 1;
  for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
  return 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(fan_in, 1)));
}

h3vae::VideoVaeConfig demo_video_config(const h3::H3Config& transformer) {
  h3vae::VideoVaeConfig c;
  c.latent_channels = transformer.in_channels;
  c.decoder_num_layers = 2;
  c.decoder_num_attention_heads = 2;
  c.decoder_attention_head_dim = 16;
  c.decoder_num_register_tokens = 2;
  c.decoder_ffn_mult = 2;
  c.latents_mean.assign(static_cast<size_t>(c.latent_channels), 0.0f);
  c.latents_std.assign(static_cast<size_t>(c.latent_channels), 1.0f);
  // The encoder: the released levels and factors (16x spatial, 4x temporal), a few channels each.
  c.block_out_channels = {8, 16, 16, 32, 32, 32};
  c.layers_per_block = 1;
  c.norm_num_groups = 8;
  return c;
}

h3_audio::AudioVaeConfig demo_audio_config(const h3::H3Config& transformer) {
  h3_audio::AudioVaeConfig c;
  c.latent_channels = transformer.audio_in_channels;
  c.latent_dim = 2 * c.latent_channels;
  c.decoder_dim = 128;  // halved by each of the 7 stages: 64, 32, ..., 1 channel
  c.resblock_kernel_sizes = {3};
  c.resblock_dilation_sizes = {{1}};
  c.latents_mean.assign(static_cast<size_t>(c.latent_channels), 0.0f);
  c.latents_std.assign(static_cast<size_t>(c.latent_channels), 1.0f);
  // The encoder (ref2va): the released rates from 4 channels (8 .. 128 over the blocks), two heads.
  c.encoder_dim = 4;
  c.num_attention_heads = 2;
  return c;
}

h3vae::DecoderWeights demo_video_weights(const h3vae::VideoVaeConfig& config, uint64_t seed) {
  uint64_t stream = 1000;
  auto source = [&](const h3vae::ParamSpec& spec) -> Expected<Tensor> {
    const std::string& n = spec.name;
    ++stream;
    if (n.ends_with("norm1.weight") || n.ends_with("norm2.weight") || n.ends_with("norm_out.weight"))
      return normal_param(spec.shape, seed, stream, 1.0f, 0.1f);
    if (n.ends_with("scale1") || n.ends_with("scale2")) return normal_param(spec.shape, seed, stream, 0.5f, 0.1f);
    if (n.ends_with(".bias")) return normal_param(spec.shape, seed, stream, 0.0f, 0.05f);
    if (n.ends_with("register_tokens")) return normal_param(spec.shape, seed, stream, 0.0f, 1.0f);
    return normal_param(spec.shape, seed, stream, 0.0f, inverse_sqrt_fan_in(spec.shape));
  };
  Expected<h3vae::DecoderWeights> w = h3vae::assemble_decoder_weights(config, source);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

h3vae::EncoderWeights demo_video_encoder_weights(const h3vae::VideoVaeConfig& config, uint64_t seed) {
  Expected<h3vae::EncoderWeights> w = h3vae::random_encoder_weights(
      config, [seed](const Shape& shape, uint64_t stream, h3vae::NormalInit init) -> Expected<Tensor> {
        return normal_param(shape, seed, stream, init.mean, init.stddev);
      });
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

// A windowed-sinc half-band low-pass, so the demo's 2x resamplers behave like the real ones.
Tensor demo_lowpass(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  const int64_t taps = t.numel();
  float* p = t.data<float>();
  double sum = 0;
  for (int64_t i = 0; i < taps; ++i) {
    const double x = (static_cast<double>(i) - (taps - 1) / 2.0) * 0.5;  // cutoff at a quarter of the rate
    const double sinc = x == 0 ? 1.0 : std::sin(M_PI * x) / (M_PI * x);
    const double hann = 0.5 - 0.5 * std::cos(2 * M_PI * (i + 0.5) / taps);
    p[i] = static_cast<float>(sinc * hann);
    sum += p[i];
  }
  for (int64_t i = 0; i < taps; ++i) p[i] = static_cast<float>(p[i] / sum);
  return t;
}

h3_audio::AudioEncoderWeights demo_audio_encoder_weights(const h3_audio::AudioVaeConfig& config, uint64_t seed) {
  Expected<h3_audio::AudioEncoderWeights> w = h3_audio::random_encoder_weights(
      config, [seed](const Shape& shape, uint64_t stream, h3_audio::NormalInit init) -> Expected<Tensor> {
        return normal_param(shape, seed, stream, init.mean, init.stddev);
      });
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

h3_audio::AudioDecoderWeights demo_audio_weights(const h3_audio::AudioVaeConfig& config, uint64_t seed) {
  uint64_t stream = 5000;
  auto source = [&](const h3_audio::TensorSpec& spec) -> Expected<Tensor> {
    const std::string& n = spec.name;
    ++stream;
    if (n.ends_with(".filter")) return demo_lowpass(spec.shape);
    if (n.ends_with(".alpha") || n.ends_with(".beta")) return normal_param(spec.shape, seed, stream, 0.0f, 0.1f);
    if (n.ends_with(".bias")) return normal_param(spec.shape, seed, stream, 0.0f, 0.02f);
    // Weight norm makes each output filter's norm g: about 1 keeps the signal's scale, and the
    // last convolution is quieter so the demo's soundtrack is not a full-scale roar.
    if (n.ends_with(".weight_g"))
      return normal_param(spec.shape, seed, stream, n.rfind("decoder.conv_post", 0) == 0 ? 0.2f : 1.0f, 0.0f);
    return normal_param(spec.shape, seed, stream, 0.0f, inverse_sqrt_fan_in(spec.shape));
  };
  Expected<h3_audio::AudioDecoderWeights> w = h3_audio::assemble_decoder(config, source);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

}  // namespace

T2vaModels demo_t2va_models(uint64_t seed) {
  T2vaModels m;
  m.name = "built-in tiny demo model (random weights)";
  m.demo = true;
  m.transformer = h3::random_weights(h3::H3Config::tiny_demo(), seed);
  const h3vae::VideoVaeConfig video_config = demo_video_config(m.transformer.config);
  m.video_vae = demo_video_weights(video_config, seed);
  m.video_encoder = demo_video_encoder_weights(video_config, seed);
  const h3_audio::AudioVaeConfig audio_config = demo_audio_config(m.transformer.config);
  m.audio_vae = demo_audio_weights(audio_config, seed);
  m.audio_encoder = demo_audio_encoder_weights(audio_config, seed);
  return m;
}

Expected<T2vaModels> load_t2va_models(const std::string& root, bool transformer_as_stored) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return not_found(root + " is not a folder; pass the root of a diffusers-layout MiniMax-H3 checkpoint "
                            "(the folder holding transformer/, vae/ and audio_vae/)");
  // Where the parts live (a diffusers folder, or the release's FL2VA/ / Ref2VA/: the first
  // partition the folder has; the engine reads the other when a workflow asks for it).
  OROCHI_ASSIGN_OR_RETURN(const h3::FolderParts parts, h3::model_folder_parts(root));
  const struct {
    const std::string& folder;
    const char* holds;
  } needed[] = {{parts.opening_folder(), "the denoiser"}, {parts.vae, "the video VAE"}, {parts.audio_vae, "the audio VAE"}};
  for (const auto& part : needed)
    if (!fs::is_directory(part.folder, ec))
      return not_found(root + " has no " + fs::path(part.folder).filename().string() + "/ folder (" + part.holds +
                       (parts.release() ? "); the release's FL2VA/ and Ref2VA/ each hold transformer/, video_vae/ "
                                          "and audio_vae/"
                                        : "); a diffusers-layout MiniMax-H3 checkpoint has transformer/, vae/ and "
                                          "audio_vae/"));
  T2vaModels m;
  m.name = root;
  OROCHI_ASSIGN_OR_RETURN(m.transformer, h3::load_weights(parts.opening_folder(), transformer_as_stored));
  OROCHI_ASSIGN_OR_RETURN(m.video_vae, h3vae::load_decoder_weights(parts.vae));
  OROCHI_ASSIGN_OR_RETURN(m.audio_vae, h3_audio::load_decoder(parts.audio_vae));
  OROCHI_RETURN_IF_ERROR(check_t2va_models(m));
  return m;
}

Expected<h3vae::EncoderWeights> load_video_encoder(const std::string& vae, const T2vaModels& models) {
  std::error_code ec;
  if (!std::filesystem::exists(vae, ec))
    return not_found(vae + " does not exist: keyframes and references are encoded with the video VAE's encoder");
  OROCHI_ASSIGN_OR_RETURN(h3vae::EncoderWeights encoder, h3vae::load_encoder_weights(vae));
  if (encoder.config.latent_channels != models.video_vae.config.latent_channels)
    return unsupported(vae + ": the encoder makes " + std::to_string(encoder.config.latent_channels) +
                       " latent channels, the decoder reads " + std::to_string(models.video_vae.config.latent_channels));
  return encoder;
}

Status check_t2va_models(const T2vaModels& m) {
  const h3::H3Config& t = m.transformer.config;
  const h3vae::VideoVaeConfig& v = m.video_vae.config;
  const h3_audio::AudioVaeConfig& a = m.audio_vae.config;
  auto mismatch = [](const std::string& what) {
    return unsupported(what + "; the transformer and the VAEs must come from one MiniMax-H3 checkpoint");
  };
  if (t.in_channels != v.latent_channels)
    return mismatch("the transformer denoises " + std::to_string(t.in_channels) + " video latent channels, the video "
                    "VAE decodes " + std::to_string(v.latent_channels));
  if (t.audio_in_channels != a.latent_channels)
    return mismatch("the transformer denoises " + std::to_string(t.audio_in_channels) + " audio latent channels, "
                    "the audio VAE decodes " + std::to_string(a.latent_channels));
  if (v.spatial_ratio != 16 || v.temporal_ratio != 4 || v.clip_length != 17 || v.token_drop != 3 ||
      t.patch_size[0] != 1 || t.patch_size[1] != 2 || t.patch_size[2] != 2)
    return mismatch("the pipeline's geometry is 16x spatial / 4x temporal VAE compression with 17-frame clips and "
                    "(1, 2, 2) patches");
  if (a.hop_length() != 800 || a.sampling_rate != 32000)
    return mismatch("the pipeline's audio is 32 kHz at 800 samples per latent, the audio VAE has " +
                    std::to_string(a.sampling_rate) + " Hz and " + std::to_string(a.hop_length()));
  if (a.latents_mean.empty() || a.latents_std.empty())
    return mismatch("the audio VAE's config.json has no latents_mean / latents_std");
  return Status::ok();
}

}  // namespace orochi::pipeline
