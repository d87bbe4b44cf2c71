#include "models/h3_audio_vae/encoder.h"

#include <cstring>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_audio.h"
#include "backends/cpu/ops_audio_encoder.h"
#include "backends/cpu/ops_llm.h"
#include "backends/cpu/ops_vae.h"

namespace orochi::h3_audio {
namespace {

constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm's default

// [B, C, L] <-> [B, L, C]: the trunk's channel-first layout to pre_block's rows and back.
Tensor transpose_last2(const Tensor& x) {
  const int64_t B = x.dim(0), R = x.dim(1), C = x.dim(2);
  Tensor out = Tensor::empty({B, C, R}, DType::kF32);
  const float* in = x.data<float>();
  float* o = out.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) o[(b * C + c) * R + r] = in[(b * R + r) * C + c];
  return out;
}

// Columns [begin, begin + width) of a row-major [S, N] matrix, as a contiguous [S, width].
Tensor columns(const Tensor& x, int64_t begin, int64_t width) {
  const int64_t S = x.dim(0), N = x.dim(1);
  Tensor out = Tensor::empty({S, width}, DType::kF32);
  for (int64_t s = 0; s < S; ++s)
    std::memcpy(out.data<float>() + s * width, x.data<float>() + s * N + begin,
                static_cast<size_t>(width) * sizeof(float));
  return out;
}

Tensor linear(const Tensor& x, const LinearWeights& l) { return cpu::linear(x, l.weight, &l.bias); }
Tensor layer_norm(const Tensor& x, const LayerNormWeights& n) {
  return cpu::layer_norm(x, n.weight, n.bias, kLayerNormEps);
}

class EncoderRun {
 public:
  EncoderRun(const AudioEncoderWeights& w, const AudioObserver& observer) : w_(w), observer_(observer) {}

  // padded [B, 1, hop·A] -> posterior mean [B, latent_channels, A]
  Tensor run(const Tensor& padded) {
    observe("padded", padded);
    Tensor h = dac(padded);                  // [B, latent_dim, A]
    const Tensor rows = transpose_last2(h);  // [B, A, latent_dim]
    const int64_t B = rows.dim(0), A = rows.dim(1), in = rows.dim(2);
    const int64_t out_dim = w_.config.latent_channels;
    Tensor projected = Tensor::empty({B, A, out_dim}, DType::kF32);
    std::vector<Tensor> attn_parts, proj_parts, mlp_parts;
    for (int64_t b = 0; b < B; ++b) {  // attention is per item: the stereo channels never mix
      const Tensor x = rows.slice(0, b, b + 1).contiguous().view({A, in});
      const PreBlockParts p = pre_block(x);
      std::memcpy(projected.data<float>() + b * A * out_dim, p.out.data<float>(),
                  static_cast<size_t>(A * out_dim) * sizeof(float));
      attn_parts.push_back(p.attn);
      proj_parts.push_back(p.proj);
      mlp_parts.push_back(p.mlp);
    }
    if (observer_) {
      observe("pre_block.attn", stack(attn_parts));
      observe("pre_block.proj", stack(proj_parts));
      observe("pre_block.mlp", stack(mlp_parts));
      observe("pre_block", projected);
    }
    // mean_proj, a 1x1 Conv1d, on the channel-first layout as the reference runs it.
    Tensor mean = cpu::conv1d(transpose_last2(projected), w_.mean_proj.weight, w_.mean_proj.bias_or_null());
    observe("mean", mean);  // [B, latent_channels, A]
    return mean;
  }

 private:
  struct PreBlockParts {
    Tensor attn, proj, mlp, out;  // [A, out_dim] each
  };

  // The DAC trunk: conv_in, one block per rate, Snake, conv_out. [B, 1, N] -> [B, latent_dim, N / hop]
  Tensor dac(const Tensor& x) {
    Tensor h = cpu::conv1d(x, w_.conv_in.weight, w_.conv_in.bias_or_null(), {.padding = 3});  // [B, encoder_dim, N]
    observe("encoder.conv_in", h);
    for (size_t i = 0; i < w_.blocks.size(); ++i) h = block(h, w_.blocks[i], "encoder.block." + std::to_string(i));
    h = cpu::snake(h, w_.alpha_out);
    h = cpu::conv1d(h, w_.conv_out.weight, w_.conv_out.bias_or_null(), {.padding = 1});  // [B, latent_dim, A]
    observe("encoder", h);
    return h;
  }

  // Residual units at C/2, Snake, then the strided conv: [B, C/2, L] -> [B, C, L / stride].
  Tensor block(const Tensor& x, const EncoderBlockWeights& b, const std::string& name) {
    Tensor h = x;
    for (size_t u = 0; u < b.units.size(); ++u) {
      h = residual_unit(h, b.units[u]);
      observe(name + ".unit." + std::to_string(u), h);
    }
    h = cpu::snake(h, b.alpha);
    h = cpu::conv1d(h, b.down.weight, b.down.bias_or_null(),
                    {.stride = b.stride, .padding = (b.stride + 1) / 2});  // padding ceil(stride / 2)
    observe(name, h);
    return h;
  }

  Tensor residual_unit(const Tensor& x, const ResidualUnitWeights& u) {
    const int64_t pad = (kEncoderResidualKernel - 1) * u.dilation / 2;
    Tensor r = cpu::snake(x, u.alpha1);
    r = cpu::conv1d(r, u.conv1.weight, u.conv1.bias_or_null(), {.padding = pad, .dilation = u.dilation});
    r = cpu::snake(r, u.alpha2);
    r = cpu::conv1d(r, u.conv2.weight, u.conv2.bias_or_null());
    // An odd kernel with padding (K−1)·d/2 keeps the length, so the reference's shortcut crop is a no-op.
    OROCHI_CHECK(r.shape() == x.shape(), "residual unit changed the shape ", x.describe(), " -> ", r.describe());
    Tensor out = x.clone();  // x + residual, in the reference's operand order
    cpu::add_inplace(out, r);
    return out;
  }

  // One item's rows [A, in] -> [A, out]: proj(norm3 x) + attn(norm1 x), then + GeGLU(norm2 h).
  PreBlockParts pre_block(const Tensor& x) {
    const PreBlockWeights& p = w_.pre_block;
    const int64_t A = x.dim(0), in = x.dim(1), H = p.num_heads, D = in / H;
    const int64_t out_dim = w_.config.latent_channels;
    PreBlockParts parts;

    // Causal attention over the A latent steps, then the heads pooled down to out_dim.
    const Tensor qkv = cpu::linear(layer_norm(x, p.norm1), p.qkv_weight, &p.qkv_bias);  // [A, 3·in] = [A, 3, H, D]
    const Tensor q = columns(qkv, 0, in).view({A, H, D});
    const Tensor k = columns(qkv, in, in).view({A, H, D});
    const Tensor v = columns(qkv, 2 * in, in).view({A, H, D});
    const Tensor heads = cpu::causal_attention_gqa(q, k, v);            // [A, H, D]
    parts.attn = linear(cpu::pool_heads(heads, out_dim), p.attn_proj);  // [A, out]

    parts.proj = linear(layer_norm(x, p.norm3), p.proj);  // [A, out]
    Tensor h = parts.proj.clone();
    cpu::add_inplace(h, parts.attn);

    const Tensor n = layer_norm(layer_norm(h, p.norm2), p.mlp_norm);                 // the MLP norms its input again
    parts.mlp = linear(cpu::gelu_tanh_mul(linear(n, p.w0), linear(n, p.w1)), p.w2);  // [A, out]
    parts.out = h;
    cpu::add_inplace(parts.out, parts.mlp);
    return parts;
  }

  static Tensor stack(const std::vector<Tensor>& items) {
    const int64_t n = items.front().numel();
    Shape shape = items.front().shape();
    shape.insert(shape.begin(), static_cast<int64_t>(items.size()));
    Tensor out = Tensor::empty(shape, DType::kF32);
    for (size_t i = 0; i < items.size(); ++i)
      std::memcpy(out.data<float>() + i * n, items[i].data<float>(), static_cast<size_t>(n) * sizeof(float));
    return out;
  }

  void observe(const std::string& name, const Tensor& t) const {
    if (observer_) observer_(name, t);
  }

  const AudioEncoderWeights& w_;
  const AudioObserver& observer_;
};

}  // namespace

Expected<Tensor> encode(const AudioEncoderWeights& weights, const Tensor& waveform, const AudioObserver& observer) {
  OROCHI_RETURN_IF_ERROR(check_mono_batch(waveform, "audio VAE encode"));
  const Tensor padded = pad_to_hop(weights.config, waveform);     // [B, 1, hop·A]
  const Tensor mean = EncoderRun(weights, observer).run(padded);  // [B, latent_channels, A]
  OROCHI_CHECK(mean.dim(2) == latents_for_samples(weights.config, waveform.dim(1)), "encoded ", mean.describe(),
               " from ", waveform.describe());
  return transpose_last2(mean);  // [B, A, latent_channels]
}

Expected<Tensor> encode_reference_audio(const AudioEncoderWeights& weights, const Tensor& waveform,
                                        const AudioObserver& observer) {
  OROCHI_ASSIGN_OR_RETURN(Tensor stereo, reference_stereo(waveform));       // [2, N]
  OROCHI_ASSIGN_OR_RETURN(Tensor mean, encode(weights, stereo, observer));  // [2, A, C]
  OROCHI_ASSIGN_OR_RETURN(Tensor rows, normalize(weights.config, mean));
  if (observer) observer("normalized", rows);
  return rows;
}

}  // namespace orochi::h3_audio
