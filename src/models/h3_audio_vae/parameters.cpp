#include "models/h3_audio_vae/parameters.h"

namespace orochi::h3_audio {
namespace {

void add_activation(std::vector<TensorSpec>& out, const std::string& prefix, int64_t channels) {
  out.push_back({prefix + ".act.alpha", {channels}});
  out.push_back({prefix + ".act.beta", {channels}});
  out.push_back({prefix + ".upsample.filter", {1, 1, kAliasFreeTaps}});
  out.push_back({prefix + ".downsample.lowpass.filter", {1, 1, kAliasFreeTaps}});
}

}  // namespace

std::vector<TensorSpec> decoder_tensors(const AudioVaeConfig& c) {
  std::vector<TensorSpec> out;
  out.push_back({"dec_in_proj.weight", {c.latent_dim, c.latent_channels, 1}});
  out.push_back({"dec_in_proj.bias", {c.latent_dim}});
  auto conv = [&](const std::string& prefix, int64_t cout, int64_t cin, int64_t k, bool bias) {
    out.push_back({prefix + ".weight_g", {cout, 1, 1}});
    out.push_back({prefix + ".weight_v", {cout, cin, k}});
    if (bias) out.push_back({prefix + ".bias", {cout}});
  };
  conv("decoder.conv_pre", c.decoder_dim, c.latent_dim, 7, true);
  for (int64_t i = 0; i < c.num_stages(); ++i) {
    const int64_t cin = c.decoder_dim >> i, cout = c.stage_channels(i);
    const std::string up = "decoder.ups." + std::to_string(i) + ".0";
    out.push_back({up + ".weight_g", {cin, 1, 1}});  // ConvTranspose1d: dim 0 is the input channel
    out.push_back({up + ".weight_v", {cin, cout, c.decoder_kernel_sizes[i]}});
    out.push_back({up + ".bias", {cout}});
  }
  const int64_t num_kernels = static_cast<int64_t>(c.resblock_kernel_sizes.size());
  for (int64_t i = 0; i < c.num_stages(); ++i) {
    const int64_t ch = c.stage_channels(i);
    for (int64_t j = 0; j < num_kernels; ++j) {
      const std::string block = "decoder.resblocks." + std::to_string(i * num_kernels + j);
      const int64_t k = c.resblock_kernel_sizes[j];
      const size_t num_dilations = c.resblock_dilation_sizes[j].size();
      for (size_t d = 0; d < num_dilations; ++d) conv(block + ".convs1." + std::to_string(d), ch, ch, k, true);
      for (size_t d = 0; d < num_dilations; ++d) conv(block + ".convs2." + std::to_string(d), ch, ch, k, true);
      for (size_t a = 0; a < 2 * num_dilations; ++a)
        add_activation(out, block + ".activations." + std::to_string(a), ch);
    }
  }
  const int64_t last = c.stage_channels(c.num_stages() - 1);
  add_activation(out, "decoder.activation_post", last);
  conv("decoder.conv_post", 1, last, 7, false);
  return out;
}

std::vector<TensorSpec> encoder_tensors(const AudioVaeConfig& c) {
  std::vector<TensorSpec> out;
  auto conv = [&](const std::string& prefix, int64_t cout, int64_t cin, int64_t k) {
    out.push_back({prefix + ".weight_g", {cout, 1, 1}});
    out.push_back({prefix + ".weight_v", {cout, cin, k}});
    out.push_back({prefix + ".bias", {cout}});
  };
  auto snake = [&](const std::string& prefix, int64_t channels) {
    out.push_back({prefix + ".alpha", {1, channels, 1}});
  };
  // encoder.block is one nn.Sequential: conv_in, one EncoderBlock per rate, Snake, conv_out.
  conv("encoder.block.0", c.encoder_dim, 1, 7);
  for (int64_t i = 0; i < c.num_encoder_blocks(); ++i) {
    const std::string block = "encoder.block." + std::to_string(i + 1) + ".block.";
    const int64_t half = c.encoder_block_channels(i) / 2;
    for (int64_t u = 0; u < kEncoderResidualUnits; ++u) {
      const std::string unit = block + std::to_string(u) + ".block.";
      snake(unit + "0", half);
      conv(unit + "1", half, half, kEncoderResidualKernel);
      snake(unit + "2", half);
      conv(unit + "3", half, half, 1);
    }
    snake(block + std::to_string(kEncoderResidualUnits), half);
    conv(block + std::to_string(kEncoderResidualUnits + 1), 2 * half, half, 2 * c.encoder_rates[i]);
  }
  const int64_t trunk = c.encoder_block_channels(c.num_encoder_blocks() - 1);
  snake("encoder.block." + std::to_string(c.num_encoder_blocks() + 1), trunk);
  conv("encoder.block." + std::to_string(c.num_encoder_blocks() + 2), c.latent_dim, trunk, 3);

  const int64_t in = c.latent_dim, lat = c.latent_channels;
  auto norm = [&](const std::string& prefix, int64_t width) {
    out.push_back({prefix + ".weight", {width}});
    out.push_back({prefix + ".bias", {width}});
  };
  auto linear = [&](const std::string& prefix, int64_t n_out, int64_t n_in) {
    out.push_back({prefix + ".weight", {n_out, n_in}});
    out.push_back({prefix + ".bias", {n_out}});
  };
  norm("pre_block.norm1", in);
  out.push_back({"pre_block.attn.qkv.weight", {3 * in, in}});
  out.push_back({"pre_block.attn.q_bias", {in}});
  out.push_back({"pre_block.attn.zero_k_bias", {in}});
  out.push_back({"pre_block.attn.v_bias", {in}});
  linear("pre_block.attn.proj", lat, lat);
  linear("pre_block.proj", lat, in);
  norm("pre_block.norm3", in);
  norm("pre_block.norm2", lat);
  norm("pre_block.mlp.norm", lat);
  linear("pre_block.mlp.w0", kPreBlockMlpRatio * lat, lat);
  linear("pre_block.mlp.w1", kPreBlockMlpRatio * lat, lat);
  linear("pre_block.mlp.w2", lat, kPreBlockMlpRatio * lat);
  out.push_back({"mean_proj.weight", {lat, lat, 1}});
  out.push_back({"mean_proj.bias", {lat}});
  return out;
}

bool is_encoder_tensor(const std::string& name) {
  for (const char* prefix : {"encoder.", "pre_block.", "mean_proj.", "logs_proj."})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace orochi::h3_audio
