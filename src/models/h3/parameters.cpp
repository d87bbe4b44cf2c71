#include "models/h3/parameters.h"

namespace orochi::h3 {

const char* param_group_name(ParamGroup group) {
  switch (group) {
    case ParamGroup::kAttention: return "attention";
    case ParamGroup::kFfn: return "ffn";
    case ParamGroup::kAdaln: return "adaln";
    case ParamGroup::kEmbedding: return "embeddings";
    case ParamGroup::kHead: return "heads";
    case ParamGroup::kNorm: return "norms";
  }
  return "?";
}

namespace {

void add_linear(std::vector<ParamSpec>& out, const std::string& name, int64_t in, int64_t outf,
                bool bias) {
  out.push_back({name + ".weight", {outf, in}});
  if (bias) out.push_back({name + ".bias", {outf}});
}

// The attention + SwiGLU body shared by refiner and transformer blocks.
void add_block_body(std::vector<ParamSpec>& out, const std::string& p, const H3Config& c) {
  const int64_t H = c.hidden_size, inner = c.inner_dim(), hd = c.attention_head_dim;
  out.push_back({p + "norm1.weight", {H}});
  add_linear(out, p + "attn.to_q", H, inner, false);
  add_linear(out, p + "attn.to_k", H, inner, false);
  add_linear(out, p + "attn.to_v", H, inner, false);
  out.push_back({p + "attn.norm_q.weight", {hd}});
  out.push_back({p + "attn.norm_k.weight", {hd}});
  add_linear(out, p + "attn.to_out.0", inner, H, false);
  out.push_back({p + "norm2.weight", {H}});
  add_linear(out, p + "ff.net.0.proj", H, 2 * c.ffn_dim, false);
  add_linear(out, p + "ff.net.2", c.ffn_dim, H, false);
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

std::vector<ParamSpec> h3_parameters(const H3Config& c) {
  const int64_t H = c.hidden_size;
  std::vector<ParamSpec> out;
  add_linear(out, "proj_in", c.video_patch_dim(), H, true);
  add_linear(out, "audio_proj_in", c.audio_in_channels, H, true);
  add_linear(out, "context_embedder", c.text_dim, H, true);
  if (c.adaln_curve_points > 0) {
    out.push_back({"adaln_t_table", {c.adaln_curve_points, c.time_embed_dim}});  // adaln_curve.h
  } else {
    add_linear(out, "time_embedder.linear_1", c.freq_dim, c.time_embed_hidden_dim, true);
    add_linear(out, "time_embedder.linear_2", c.time_embed_hidden_dim, c.time_embed_dim, true);
  }
  for (int64_t i = 0; i < c.num_refiner_layers; ++i)
    add_block_body(out, "token_refiner.refiner_blocks." + std::to_string(i) + ".", c);
  out.push_back({"token_refiner.final_norm.weight", {H}});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    add_block_body(out, p, c);
    add_linear(out, p + "adaln_proj.linear", c.time_embed_dim, 6 * kModalities * H, true);
  }
  out.push_back({"norm_out.norm.weight", {H}});
  add_linear(out, "norm_out.linear", c.time_embed_dim, 2 * H, true);
  add_linear(out, "proj_out", H, c.video_patch_dim(), true);
  add_linear(out, "audio_proj_out", H, c.audio_in_channels, true);
  return out;
}

ParamGroup param_group_of(std::string_view n) {
  if (contains(n, "adaln_proj") || contains(n, "norm_out.linear")) return ParamGroup::kAdaln;
  if (contains(n, "norm")) return ParamGroup::kNorm;  // norm1/2, norm_q/k, q_norm, final_norm, norm_out.norm
  if (contains(n, "attn.")) return ParamGroup::kAttention;
  if (contains(n, "ff.net") || contains(n, "mlp.")) return ParamGroup::kFfn;
  if (contains(n, "proj_out") || contains(n, "video_out") || contains(n, "audio_out"))
    return ParamGroup::kHead;
  return ParamGroup::kEmbedding;  // patch/audio/context projections, time MLP, rope buffers
}

bool is_f32_island(std::string_view name) {
  for (const char* p : {"proj_in.", "audio_proj_in.", "time_embedder.", "adaln_t_table", "proj_out.", "audio_proj_out."})
    if (name.starts_with(p)) return true;
  return false;
}

bool is_quantized_linear(std::string_view name) {
  if (!name.starts_with("transformer_blocks.")) return false;
  for (const char* suffix : {".attn.to_q.weight", ".attn.to_k.weight", ".attn.to_v.weight", ".attn.to_out.0.weight",
                             ".ff.net.0.proj.weight", ".ff.net.2.weight"})
    if (name.ends_with(suffix)) return true;
  return false;
}

}  // namespace orochi::h3
