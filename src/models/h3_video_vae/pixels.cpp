#include "models/h3_video_vae/pixels.h"

#include <algorithm>

namespace orochi::h3vae {
namespace {

// y[c, ...] = x[c, ...] · scale[c] + shift[c] over a channel-major tensor.
Tensor affine_per_channel(const Tensor& x_in, const float* scale, const float* shift) {
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  const int64_t C = x.dim(0), plane = x.numel() / C;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < plane; ++i) {
      const float scaled = px[c * plane + i] * scale[c];
      py[c * plane + i] = scaled + shift[c];
    }
  return y;
}

}  // namespace

Expected<Tensor> denormalize_latents(const VideoVaeConfig& c, const Tensor& z) {
  if (!z.defined() || z.dtype() != DType::kF32 || z.ndim() != 4 || z.dim(0) != c.latent_channels)
    return shape_mismatch("latents must be f32 [" + std::to_string(c.latent_channels) + ", T, H, W], got " +
                          (z.defined() ? z.describe() : std::string("nothing")));
  return affine_per_channel(z, c.latents_std.data(), c.latents_mean.data());
}

Expected<Tensor> to_pixels(const Tensor& video) {
  if (!video.defined() || video.dtype() != DType::kF32 || video.ndim() != 4 || video.dim(0) != 3)
    return shape_mismatch("decoded video must be f32 [3, F, H, W], got " +
                          (video.defined() ? video.describe() : std::string("nothing")));
  static constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  static constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  Tensor pixels = affine_per_channel(video, kStd, kMean);
  float* p = pixels.data<float>();
  for (int64_t i = 0; i < pixels.numel(); ++i) p[i] = std::clamp(p[i], 0.0f, 1.0f);
  return pixels;
}

}  // namespace orochi::h3vae
