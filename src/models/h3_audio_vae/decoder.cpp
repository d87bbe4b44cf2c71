#include "models/h3_audio_vae/decoder.h"

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_audio.h"

namespace orochi::h3_audio {
namespace {

Status check_latents(const AudioVaeConfig& config, const Tensor& latents, const char* what) {
  if (!latents.defined() || latents.ndim() != 3 || latents.dim(0) < 1 || latents.dim(1) < 1 ||
      latents.dim(2) != config.latent_channels || !dtype_is_float(latents.dtype()))
    return shape_mismatch(std::string(what) + ": audio latents must be float [channels, A, " +
                          std::to_string(config.latent_channels) + "] (one batch item per stereo channel, A >= 1 " +
                          "latents each), got " + (latents.defined() ? latents.describe() : "nothing"));
  return Status::ok();
}

// [B, A, C] -> [B, C, A]: latent rows to the channel-major layout of the convolutions.
Tensor rows_to_channels(const Tensor& rows) {
  const int64_t B = rows.dim(0), A = rows.dim(1), C = rows.dim(2);
  Tensor out = Tensor::empty({B, C, A}, DType::kF32);
  const float* in = rows.data<float>();
  float* o = out.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t c = 0; c < C; ++c) o[(b * C + c) * A + a] = in[(b * A + a) * C + c];
  return out;
}

class DecoderRun {
 public:
  DecoderRun(const AudioDecoderWeights& w, const AudioObserver& observer) : w_(w), observer_(observer) {}

  Tensor run(const Tensor& latents_bca) {
    Tensor h = cpu::conv1d(latents_bca, w_.dec_in_proj.weight, w_.dec_in_proj.bias_or_null());  // [B, latent_dim, A]
    observe("dec_in_proj", h);
    h = cpu::conv1d(h, w_.conv_pre.weight, w_.conv_pre.bias_or_null(), {.padding = 3});  // [B, decoder_dim, A]
    observe("conv_pre", h);
    for (size_t i = 0; i < w_.stages.size(); ++i) h = stage(h, w_.stages[i], "stage." + std::to_string(i));
    h = alias_free_snake(h, w_.act_post, "act_post");                  // [B, C_last, hop·A]
    h = cpu::conv1d(h, w_.conv_post.weight, nullptr, {.padding = 3});  // [B, 1, hop·A]
    observe("conv_post", h);
    cpu::clamp_inplace(h, -1.0f, 1.0f);
    observe("out", h);
    return h;
  }

 private:
  // Upsample by `rate`, then the mean of the AMP blocks, each seeing the upsampled signal.
  Tensor stage(const Tensor& x, const UpsampleStageWeights& s, const std::string& name) {
    const Tensor up =
        cpu::conv_transpose1d(x, s.up.weight, s.up.bias_or_null(),
                              {.stride = s.rate, .padding = (s.kernel - s.rate) / 2});  // [B, C/2, rate·L]
    observe(name + ".up", up);
    Tensor sum;
    for (size_t j = 0; j < s.blocks.size(); ++j) {
      Tensor block = amp_block(up, s.blocks[j], name + ".amp." + std::to_string(j));
      observe(name + ".amp." + std::to_string(j), block);
      if (j == 0)
        sum = std::move(block);
      else
        cpu::add_inplace(sum, block);
    }
    // A division, as the reference writes it (x / n and x · (1/n) round differently for n = 3).
    const float n = static_cast<float>(s.blocks.size());
    float* p = sum.data<float>();
    for (int64_t i = 0; i < sum.numel(); ++i) p[i] = p[i] / n;
    observe(name, sum);
    return sum;
  }

  Tensor amp_block(const Tensor& x, const AmpBlockWeights& b, const std::string& name) {
    Tensor h = x.clone();
    for (size_t d = 0; d < b.dilations.size(); ++d) {
      const int64_t dilation = b.dilations[d];
      Tensor r = alias_free_snake(h, b.acts[2 * d], name + ".act." + std::to_string(2 * d));
      r = cpu::conv1d(r, b.convs1[d].weight, b.convs1[d].bias_or_null(),
                      {.padding = (b.kernel * dilation - dilation) / 2, .dilation = dilation});
      r = alias_free_snake(r, b.acts[2 * d + 1], name + ".act." + std::to_string(2 * d + 1));
      r = cpu::conv1d(r, b.convs2[d].weight, b.convs2[d].bias_or_null(), {.padding = (b.kernel - 1) / 2});
      cpu::add_inplace(h, r);
    }
    return h;
  }

  // Upsample 2x, SnakeBeta, downsample 2x: the nonlinearity runs at twice the rate to limit aliasing.
  Tensor alias_free_snake(const Tensor& x, const AliasFreeSnakeWeights& a, const std::string& name) {
    Tensor up = cpu::upsample1d_lowpass(x, a.up_filter, kAliasFreeRatio);  // [B, C, 2L]
    Tensor act = cpu::snake_beta(up, a.log_alpha, a.log_beta);
    Tensor out = cpu::downsample1d_lowpass(act, a.down_filter, kAliasFreeRatio);  // [B, C, L]
    observe(name, out);
    return out;
  }

  void observe(const std::string& name, const Tensor& t) const {
    if (observer_) observer_(name, t);
  }

  const AudioDecoderWeights& w_;
  const AudioObserver& observer_;
};

}  // namespace

Expected<Tensor> denormalize(const AudioVaeConfig& config, const Tensor& latents) {
  if (config.latents_mean.empty() || config.latents_std.empty())
    return invalid_argument(
        "the audio VAE config.json has no latents_mean / latents_std, so latents cannot be "
        "denormalized; use the audio_vae/config.json of the release");
  OROCHI_RETURN_IF_ERROR(check_latents(config, latents, "denormalize"));
  Tensor out = latents.to(DType::kF32);  // a contiguous copy
  const int64_t C = config.latent_channels;
  float* p = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const float scaled = p[i] * config.latents_std[i % C];  // two roundings, as z * std + mean
    p[i] = scaled + config.latents_mean[i % C];
  }
  return out;
}

Expected<Tensor> decode(const AudioDecoderWeights& weights, const Tensor& latents, const AudioObserver& observer) {
  OROCHI_RETURN_IF_ERROR(check_latents(weights.config, latents, "audio VAE decode"));
  const Tensor rows = latents.to(DType::kF32);
  const int64_t B = rows.dim(0), A = rows.dim(1);
  const Tensor out = DecoderRun(weights, observer).run(rows_to_channels(rows));  // [B, 1, hop·A]
  OROCHI_CHECK(out.dim(2) == weights.config.hop_length() * A, "decoded ", out.describe(), " for ", A, " latents");
  return out.view({B, weights.config.hop_length() * A});
}

}  // namespace orochi::h3_audio
