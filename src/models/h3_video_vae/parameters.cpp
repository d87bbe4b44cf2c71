#include "models/h3_video_vae/parameters.h"

namespace orochi::h3vae {
namespace {

void add_linear(std::vector<ParamSpec>& out, const std::string& name, int64_t in, int64_t outf) {
  out.push_back({name + ".weight", {outf, in}});
  out.push_back({name + ".bias", {outf}});
}

}  // namespace

std::vector<ParamSpec> decoder_parameters(const VideoVaeConfig& c) {
  const int64_t D = c.dim(), C = c.latent_channels;
  std::vector<ParamSpec> out;
  // A 1x1x1 Conv3d: applied as a linear over channels.
  out.push_back({"post_quant_conv.weight", {C, C, 1, 1, 1}});
  out.push_back({"post_quant_conv.bias", {C}});
  add_linear(out, "decoder.proj_in", C, D);
  out.push_back({"decoder.register_tokens", {1, c.decoder_num_register_tokens, D}});
  for (int64_t i = 0; i < c.decoder_num_layers; ++i) {
    const std::string p = "decoder.transformer_blocks." + std::to_string(i) + ".";
    out.push_back({p + "norm1.weight", {D}});
    add_linear(out, p + "attn.to_q", D, D);
    add_linear(out, p + "attn.to_k", D, D);
    add_linear(out, p + "attn.to_v", D, D);
    add_linear(out, p + "attn.to_out.0", D, D);
    out.push_back({p + "scale1", {D}});
    out.push_back({p + "norm2.weight", {D}});
    add_linear(out, p + "ff.net.0.proj", D, 2 * c.ffn_inner());  // rows [value; gate]
    add_linear(out, p + "ff.net.2", c.ffn_inner(), D);
    out.push_back({p + "scale2", {D}});
  }
  out.push_back({"decoder.norm_out.weight", {D}});
  out.push_back({"decoder.norm_out.bias", {D}});
  add_linear(out, "decoder.proj_out", D, c.patch_values());
  return out;
}

bool is_encoder_key(std::string_view name) {
  return name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0;
}

}  // namespace orochi::h3vae
