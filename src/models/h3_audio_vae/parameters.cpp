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

bool is_encoder_tensor(const std::string& name) {
  for (const char* prefix : {"encoder.", "pre_block.", "mean_proj.", "logs_proj."})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace orochi::h3_audio
