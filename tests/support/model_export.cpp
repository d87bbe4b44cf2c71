#include "support/model_export.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "weights/safetensors_writer.h"

namespace orochi::testing {
namespace {

Tensor vector_tensor(const std::vector<float>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::kF32);
  std::memcpy(t.data<float>(), v.data(), v.size() * sizeof(float));
  return t;
}

// Rows of equal-width f32 parts stacked in order.
Tensor cat_rows(const std::vector<Tensor>& parts) {
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.dim(0);
  Shape shape = parts[0].shape();
  shape[0] = rows;
  Tensor out = Tensor::empty(shape, DType::kF32);
  char* at = reinterpret_cast<char*>(out.data<float>());
  for (const Tensor& p : parts) {
    const Tensor c = p.contiguous();
    std::memcpy(at, c.raw_data(), c.nbytes());
    at += c.nbytes();
  }
  return out;
}

// [q; k; v] rows of `heads` heads -> per head [q_h; k_h; v_h].
Tensor fuse_per_head(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads) {
  const int64_t hd = q.dim(0) / heads;
  std::vector<Tensor> parts;
  for (int64_t h = 0; h < heads; ++h)
    for (const Tensor* p : {&q, &k, &v}) parts.push_back(p->slice(0, h * hd, (h + 1) * hd));
  return cat_rows(parts);
}

Tensor swap_halves(const Tensor& t) {
  const int64_t half = t.dim(0) / 2;
  return cat_rows({t.slice(0, half, t.dim(0)), t.slice(0, 0, half)});
}

}  // namespace

NamedTensors h3_named_tensors(const h3::H3Weights& w) {
  NamedTensors out;
  auto linear = [&](const std::string& n, const h3::LinearWeights& l) {
    out[n + ".weight"] = l.weight;
    if (l.bias.defined()) out[n + ".bias"] = l.bias;
  };
  auto block = [&](const std::string& p, const h3::BlockWeights& b) {
    out[p + "norm1.weight"] = b.norm1;
    out[p + "norm2.weight"] = b.norm2;
    linear(p + "attn.to_q", b.attn.to_q);
    linear(p + "attn.to_k", b.attn.to_k);
    linear(p + "attn.to_v", b.attn.to_v);
    linear(p + "attn.to_out.0", b.attn.to_out);
    out[p + "attn.norm_q.weight"] = b.attn.norm_q;
    out[p + "attn.norm_k.weight"] = b.attn.norm_k;
    linear(p + "ff.net.0.proj", b.ff_in);
    linear(p + "ff.net.2", b.ff_out);
    if (b.adaln.weight.defined()) linear(p + "adaln_proj.linear", b.adaln);
  };
  linear("proj_in", w.proj_in);
  linear("audio_proj_in", w.audio_proj_in);
  linear("context_embedder", w.context_embedder);
  if (w.adaln_t_table.defined()) {
    out["adaln_t_table"] = w.adaln_t_table;
  } else {
    linear("time_embedder.linear_1", w.time_linear_1);
    linear("time_embedder.linear_2", w.time_linear_2);
  }
  for (size_t i = 0; i < w.refiner.size(); ++i) block("token_refiner.refiner_blocks." + std::to_string(i) + ".", w.refiner[i]);
  out["token_refiner.final_norm.weight"] = w.refiner_final_norm;
  for (size_t i = 0; i < w.blocks.size(); ++i) block("transformer_blocks." + std::to_string(i) + ".", w.blocks[i]);
  out["norm_out.norm.weight"] = w.norm_out;
  linear("norm_out.linear", w.norm_out_linear);
  linear("proj_out", w.proj_out);
  linear("audio_proj_out", w.audio_proj_out);
  return out;
}

nlohmann::json h3_config_json(const h3::H3Config& c) {
  return {{"num_attention_heads", c.num_attention_heads}, {"attention_head_dim", c.attention_head_dim},
          {"hidden_size", c.hidden_size}, {"num_layers", c.num_layers},
          {"num_refiner_layers", c.num_refiner_layers}, {"ffn_dim", c.ffn_dim},
          {"in_channels", c.in_channels}, {"audio_in_channels", c.audio_in_channels},
          {"text_dim", c.text_dim}, {"freq_dim", c.freq_dim},
          {"time_embed_hidden_dim", c.time_embed_hidden_dim}, {"time_embed_dim", c.time_embed_dim},
          {"rope_freq_dim", c.rope_freq_dim}};
}

NamedTensors comfy_video_decoder_tensors(const h3vae::DecoderWeights& w) {
  const h3vae::VideoVaeConfig& c = w.config;
  const int64_t C = c.latent_channels, D = c.dim(), R = c.decoder_num_register_tokens;
  NamedTensors out;
  out["post_quant_conv.weight"] = w.post_quant_conv.weight.contiguous().view({C, C, 1, 1, 1});
  out["post_quant_conv.bias"] = w.post_quant_conv.bias;
  out["decoder.x_embedder.weight"] = w.proj_in.weight;
  out["decoder.x_embedder.bias"] = w.proj_in.bias;
  out["decoder.register_tokens"] = w.register_tokens.contiguous().view({1, R, D});
  out["decoder.mask_token"] = Tensor::zeros({1, 1, D}, DType::kF32);
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    const h3vae::DecoderBlockWeights& b = w.blocks[i];
    const std::string p = "decoder.transformer_blocks." + std::to_string(i) + ".";
    const int64_t heads = c.decoder_num_attention_heads;
    out[p + "norm1.weight"] = b.norm1;
    out[p + "attn.to_qkv.weight"] = fuse_per_head(b.to_q.weight, b.to_k.weight, b.to_v.weight, heads);
    out[p + "attn.to_qkv.bias"] = fuse_per_head(b.to_q.bias, b.to_k.bias, b.to_v.bias, heads);
    out[p + "attn.to_out.weight"] = b.to_out.weight;
    out[p + "attn.to_out.bias"] = b.to_out.bias;
    out[p + "scale1"] = b.scale1;
    out[p + "norm2.weight"] = b.norm2;
    out[p + "ff.w1.weight"] = swap_halves(b.ff_in.weight);  // [value; gate] -> [gate; up]
    out[p + "ff.w1.bias"] = swap_halves(b.ff_in.bias);
    out[p + "ff.w2.weight"] = b.ff_out.weight;
    out[p + "ff.w2.bias"] = b.ff_out.bias;
    out[p + "scale2"] = b.scale2;
  }
  out["decoder.norm_out.weight"] = w.norm_out_weight;
  out["decoder.norm_out.bias"] = w.norm_out_bias;
  out["decoder.proj_out.weight"] = w.proj_out.weight;
  out["decoder.proj_out.bias"] = w.proj_out.bias;
  out["latents_mean"] = vector_tensor(c.latents_mean);
  out["latents_std"] = vector_tensor(c.latents_std);
  return out;
}

nlohmann::json video_vae_config_json(const h3vae::VideoVaeConfig& c, bool with_latents) {
  std::vector<int64_t> spatial = c.spatial_downsample_factors, temporal = c.temporal_downsample_factors;
  nlohmann::json j = {{"_class_name", "AutoencoderKLMiniMaxH3"},
                      {"latent_channels", c.latent_channels},
                      {"out_channels", c.out_channels},
                      {"in_channels", c.in_channels},
                      {"spatial_downsample_factors", spatial},
                      {"temporal_downsample_factors", temporal},
                      {"block_out_channels", c.block_out_channels},
                      {"layers_per_block", c.layers_per_block},
                      {"norm_num_groups", c.norm_num_groups},
                      {"norm_eps", c.norm_eps},
                      {"decoder_num_layers", c.decoder_num_layers},
                      {"decoder_num_attention_heads", c.decoder_num_attention_heads},
                      {"decoder_attention_head_dim", c.decoder_attention_head_dim},
                      {"decoder_num_register_tokens", c.decoder_num_register_tokens},
                      {"decoder_ffn_mult", c.decoder_ffn_mult},
                      {"decoder_rope_theta", c.decoder_rope_theta},
                      {"decoder_rope_dim_ratio", c.decoder_rope_dim_ratio},
                      {"decoder_norm_eps", c.decoder_norm_eps},
                      {"clip_length", c.clip_length},
                      {"token_drop", c.token_drop}};
  if (with_latents) {
    j["latents_mean"] = c.latents_mean;
    j["latents_std"] = c.latents_std;
  }
  return j;
}

NamedTensors comfy_audio_decoder_tensors(const h3_audio::AudioDecoderWeights& w) {
  NamedTensors out;
  auto conv = [&](const std::string& p, const h3_audio::ConvWeights& c) {
    out[p + ".weight"] = c.weight;
    if (c.bias.defined()) out[p + ".bias"] = c.bias;
  };
  auto act = [&](const std::string& p, const h3_audio::AliasFreeSnakeWeights& a) {
    out[p + ".act.alpha"] = a.log_alpha;
    out[p + ".act.beta"] = a.log_beta;
    out[p + ".upsample.filter"] = a.up_filter.contiguous().view({1, 1, a.up_filter.numel()});
    out[p + ".downsample.lowpass.filter"] = a.down_filter.contiguous().view({1, 1, a.down_filter.numel()});
  };
  conv("dec_in_proj", w.dec_in_proj);
  conv("decoder.conv_pre", w.conv_pre);
  int64_t resblock = 0;
  for (size_t i = 0; i < w.stages.size(); ++i) {
    conv("decoder.ups." + std::to_string(i) + ".0", w.stages[i].up);
    for (const h3_audio::AmpBlockWeights& b : w.stages[i].blocks) {
      const std::string p = "decoder.resblocks." + std::to_string(resblock++);
      for (size_t d = 0; d < b.convs1.size(); ++d) {
        conv(p + ".convs1." + std::to_string(d), b.convs1[d]);
        conv(p + ".convs2." + std::to_string(d), b.convs2[d]);
      }
      for (size_t a = 0; a < b.acts.size(); ++a) act(p + ".activations." + std::to_string(a), b.acts[a]);
    }
  }
  act("decoder.activation_post", w.act_post);
  conv("decoder.conv_post", w.conv_post);
  out["latents_mean"] = vector_tensor(w.config.latents_mean);
  out["latents_std"] = vector_tensor(w.config.latents_std);
  return out;
}

nlohmann::json audio_vae_config_json(const h3_audio::AudioVaeConfig& c, bool with_latents) {
  nlohmann::json j = {{"_class_name", "AutoencoderKLMiniMaxH3Audio"},
                      {"encoder_dim", c.encoder_dim},
                      {"encoder_rates", c.encoder_rates},
                      {"latent_dim", c.latent_dim},
                      {"latent_channels", c.latent_channels},
                      {"num_attention_heads", c.num_attention_heads},
                      {"decoder_dim", c.decoder_dim},
                      {"decoder_rates", c.decoder_rates},
                      {"decoder_kernel_sizes", c.decoder_kernel_sizes},
                      {"resblock_kernel_sizes", c.resblock_kernel_sizes},
                      {"resblock_dilation_sizes", c.resblock_dilation_sizes},
                      {"sampling_rate", c.sampling_rate}};
  if (with_latents) {
    j["latents_mean"] = c.latents_mean;
    j["latents_std"] = c.latents_std;
  }
  return j;
}

std::string write_tensors(const std::string& path, const NamedTensors& tensors) {
  std::vector<std::pair<std::string, Tensor>> list(tensors.begin(), tensors.end());
  const Status s = weights::write_safetensors(path, list);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return path;
}

std::string write_json(const std::string& path, const nlohmann::json& json) {
  std::ofstream(path) << json.dump(2);
  return path;
}

}  // namespace orochi::testing
