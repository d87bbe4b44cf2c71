#include "models/h3_video_vae/vit_decoder.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "backends/cpu/ops_vae.h"

namespace orochi::h3vae {
namespace {

void notify(const DecodeObserver& observer, const std::string& name, const Tensor& t) {
  if (observer) observer(name, t);
}

Tensor apply(const Tensor& x, const Linear& l) { return cpu::linear(x, l.weight, &l.bias); }

// [C, N] <-> [N, C]: latents are channel-major, tokens are channel-last.
Tensor transpose2d(const Tensor& x) {
  const int64_t R = x.dim(0), C = x.dim(1);
  Tensor y = Tensor::empty({C, R}, DType::kF32);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) py[c * R + r] = px[r * C + c];
  return y;
}

Tensor self_attention(const Tensor& x, const DecoderBlockWeights& b, const VideoVaeConfig& c,
                      const cpu::RopeTable& rope, const Tensor& ones) {
  const int64_t S = x.dim(0), heads = c.decoder_num_attention_heads, hd = c.decoder_attention_head_dim;
  const float eps = static_cast<float>(c.decoder_norm_eps);
  // q/k RMSNorm has no affine weight: `ones` stands in for it.
  Tensor q = cpu::rms_norm(apply(x, b.to_q).view({S, heads, hd}), ones, eps);  // [S, h, d]
  Tensor k = cpu::rms_norm(apply(x, b.to_k).view({S, heads, hd}), ones, eps);
  Tensor v = apply(x, b.to_v).view({S, heads, hd});
  cpu::apply_rope(q, rope);
  cpu::apply_rope(k, rope);
  return apply(cpu::attention(q, k, v).view({S, heads * hd}), b.to_out);  // [S, D]
}

void decoder_block(Tensor& h, const DecoderBlockWeights& b, const VideoVaeConfig& c, const cpu::RopeTable& rope,
                   const Tensor& ones) {
  const float eps = static_cast<float>(c.decoder_norm_eps);
  cpu::add_scaled_inplace(h, self_attention(cpu::rms_norm(h, b.norm1, eps), b, c, rope, ones), b.scale1);
  Tensor ff = apply(cpu::swiglu(apply(cpu::rms_norm(h, b.norm2, eps), b.ff_in)), b.ff_out);  // [S, D]
  cpu::add_scaled_inplace(h, ff, b.scale2);
}

// Token (t, y, x) -> its pt x p x p pixel block, values ordered (c, pt, ph, pw).
Tensor unpatchify(const Tensor& patches, const VideoVaeConfig& c, int64_t T, int64_t H, int64_t W) {
  const int64_t ch = c.out_channels, pt = c.temporal_ratio, p = c.spatial_ratio;
  const int64_t F = T * pt, PH = H * p, PW = W * p;
  Tensor out = Tensor::empty({ch, F, PH, PW}, DType::kF32);
  const float* src = patches.data<float>();
  float* dst = out.data<float>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        const float* row = src + ((t * H + y) * W + x) * c.patch_values();
        for (int64_t k = 0; k < ch; ++k)
          for (int64_t a = 0; a < pt; ++a)
            for (int64_t b = 0; b < p; ++b) {
              const float* v = row + ((k * pt + a) * p + b) * p;
              float* o = dst + ((k * F + t * pt + a) * PH + y * p + b) * PW + x * p;
              for (int64_t d = 0; d < p; ++d) o[d] = v[d];
            }
      }
  return out;
}

}  // namespace

cpu::RopeTable tile_rope_table(const VideoVaeConfig& c, int64_t T, int64_t H, int64_t W, int64_t extra) {
  const int64_t F = c.rope_freqs_per_axis(), S = T * H * W + extra;
  // Same op order and fp32 rounding as the reference: arange(0, 1, 6/rope_dim) -> theta^x -> 1/x.
  std::vector<float> inv(F);
  const double step = 6.0 / static_cast<double>(c.rope_dim());
  for (int64_t j = 0; j < F; ++j)
    inv[j] = 1.0f / std::pow(static_cast<float>(c.decoder_rope_theta), static_cast<float>(j * step));
  // Per-axis grid 2·((k + 0.5)/n) − 1, then scaled by 2π first (the reference's 2π·p·inv_freq).
  const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
  auto grid = [&](int64_t n) {
    std::vector<float> g(n);
    for (int64_t k = 0; k < n; ++k)
      g[k] = two_pi * (2.0f * ((static_cast<float>(k) + 0.5f) / static_cast<float>(n)) - 1.0f);
    return g;
  };
  const std::vector<float> gt = grid(T), gh = grid(H), gw = grid(W);
  Tensor positions = Tensor::empty({S, 3}, DType::kF32);  // extra tokens stay at 0
  float* pp = positions.data<float>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        float* row = pp + ((t * H + y) * W + x) * 3;
        row[0] = gt[t], row[1] = gh[y], row[2] = gw[x];
      }
  return cpu::rope_table(positions, Tensor::from_floats(inv, {F}));
}

Tensor decode_tile(const DecoderWeights& w, const Tensor& z_in, const DecodeObserver& observer) {
  const VideoVaeConfig& c = w.config;
  OROCHI_CHECK(z_in.dtype() == DType::kF32 && z_in.ndim() == 4 && z_in.dim(0) == c.latent_channels,
               "decode_tile wants f32 [", c.latent_channels, ", T, h, w] latents, got ", z_in.describe());
  const Tensor z = z_in.contiguous();
  const int64_t C = c.latent_channels, T = z.dim(1), H = z.dim(2), W = z.dim(3), N = T * H * W;
  const int64_t D = c.dim(), R = c.decoder_num_register_tokens, S = N + R + 1;

  Tensor latents = cpu::linear(transpose2d(z.view({C, N})), w.post_quant_conv.weight, &w.post_quant_conv.bias);
  if (observer) notify(observer, "post_quant_conv", transpose2d(latents).view({C, T, H, W}));
  const Tensor patches_in = apply(latents, w.proj_in);  // [N, D]
  notify(observer, "proj_in", patches_in);

  // [patches | registers | one zero token]; the last two sit at position 0 of every axis.
  Tensor h = Tensor::empty({S, D}, DType::kF32);
  std::copy_n(patches_in.data<float>(), N * D, h.data<float>());
  std::copy_n(w.register_tokens.data<float>(), R * D, h.data<float>() + N * D);
  notify(observer, "tokens", h);

  const cpu::RopeTable rope = tile_rope_table(c, T, H, W, R + 1);
  notify(observer, "rope.cos", rope.cos);
  notify(observer, "rope.sin", rope.sin);
  const Tensor ones = Tensor::from_floats(std::vector<float>(c.decoder_attention_head_dim, 1.0f),
                                          {c.decoder_attention_head_dim});
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    decoder_block(h, w.blocks[i], c, rope, ones);
    notify(observer, "block." + std::to_string(i), h);
  }
  const Tensor normed = cpu::layer_norm(h, w.norm_out_weight, w.norm_out_bias, static_cast<float>(c.decoder_norm_eps));
  notify(observer, "norm_out", normed);
  // Only the N patch tokens are projected: the registers and the zero token are dropped anyway.
  const Tensor patches = apply(normed.slice(0, 0, N).contiguous(), w.proj_out);  // [N, out_ch·pt·p·p]
  Tensor tile = unpatchify(patches, c, T, H, W);
  notify(observer, "tile", tile);
  return tile;
}

}  // namespace orochi::h3vae
