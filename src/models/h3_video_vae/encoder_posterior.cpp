#include "models/h3_video_vae/encoder_posterior.h"

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "core/torch_cpu_normal.h"

namespace orochi::h3vae {
namespace {

constexpr float kPixelMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kPixelStd[3] = {0.229f, 0.224f, 0.225f};

}  // namespace

Expected<Tensor> normalize_pixels(const Tensor& u8) {
  if (!u8.defined() || u8.dtype() != DType::kU8 || u8.ndim() != 4 || u8.dim(0) != 3)
    return invalid_argument("the video VAE takes uint8 RGB pixels [3, frames, height, width], got " +
                            (u8.defined() ? u8.describe() : std::string("nothing")));
  const Tensor src = u8.contiguous();
  const int64_t per_channel = src.numel() / 3;
  Tensor out = Tensor::uninitialized(src.shape(), DType::kF32);
  const uint8_t* in = src.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < per_channel; ++i) {
      const int64_t k = c * per_channel + i;
      // (x.float().div(255.0) − mean) / std: three fp32 ops, each rounded.
      o[k] = (static_cast<float>(in[k]) / 255.0f - kPixelMean[c]) / kPixelStd[c];
    }
  return out;
}

Tensor sample_posterior(const Tensor& moments, const Tensor& noise) {
  OROCHI_CHECK(moments.dtype() == DType::kF32 && moments.is_contiguous() && moments.ndim() == 4 &&
                   moments.dim(0) % 2 == 0,
               "moments ", moments.describe(), " must be contiguous f32 [2C, T, h, w]");
  const int64_t C = moments.dim(0) / 2;
  const Shape shape = {C, moments.dim(1), moments.dim(2), moments.dim(3)};
  OROCHI_CHECK(noise.dtype() == DType::kF32 && noise.is_contiguous() && noise.shape() == shape, "noise ",
               noise.describe(), " must be f32 ", shape_to_string(shape));
  const int64_t n = shape_numel(shape);
  Tensor z = Tensor::uninitialized(shape, DType::kF32);
  const float* mean = moments.data<float>();
  const float* logvar = mean + n;  // torch.chunk(moments, 2, dim=1): the second half of the channels
  const float* eps = noise.data<float>();
  float* out = z.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float lv = std::clamp(logvar[i], -30.0f, 20.0f);
    const float std_dev = std::exp(0.5f * lv);
    out[i] = mean[i] + std_dev * eps[i];
  }
  return z;
}

Tensor posterior_noise(int64_t channels, int64_t frames, int64_t height, int64_t width, uint64_t seed,
                       TorchCpuKernel kernel) {
  // The reference draws the batch dim too ([1, C, T, h, w]); with batch 1 the C-order stream is the same.
  return torch_cpu_randn({channels, frames, height, width}, seed, kernel);
}

Expected<Tensor> fp16_round_and_normalize(const VideoVaeConfig& config, const Tensor& z) {
  if (!z.defined() || z.dtype() != DType::kF32 || z.ndim() != 4 || z.dim(0) != config.latent_channels)
    return invalid_argument("latents must be f32 [" + std::to_string(config.latent_channels) +
                            ", T, h, w], got " + (z.defined() ? z.describe() : std::string("nothing")));
  const Tensor src = z.contiguous();
  const int64_t per_channel = src.numel() / config.latent_channels;
  Tensor out = Tensor::uninitialized(src.shape(), DType::kF32);
  const float* in = src.data<float>();
  float* o = out.data<float>();
  for (int64_t c = 0; c < config.latent_channels; ++c)
    for (int64_t i = 0; i < per_channel; ++i) {
      const int64_t k = c * per_channel + i;
      const float rounded = f16_to_f32(f32_to_f16(in[k]));  // use_fp16_latent
      o[k] = (rounded - config.latents_mean[c]) / config.latents_std[c];
    }
  return out;
}

Expected<Tensor> encode_condition(const EncoderWeights& weights, const Tensor& pixels_u8, const EncodeOptions& options,
                                  uint64_t seed) {
  OROCHI_ASSIGN_OR_RETURN(Tensor pixels, normalize_pixels(pixels_u8));                 // [3, F, H, W]
  OROCHI_ASSIGN_OR_RETURN(Tensor moments, encode_moments(weights, pixels, options));  // [2C, T, h, w]
  pixels = Tensor();  // the fp32 frames are the largest buffer: release them before sampling
  return condition_from_moments(weights.config, moments, seed);
}

Expected<Tensor> condition_from_moments(const VideoVaeConfig& config, const Tensor& moments, uint64_t seed) {
  const Tensor noise = posterior_noise(moments.dim(0) / 2, moments.dim(1), moments.dim(2), moments.dim(3), seed);
  return fp16_round_and_normalize(config, sample_posterior(moments, noise));
}

}  // namespace orochi::h3vae
