#include "models/h3/config.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "weights/config_fields.h"

namespace orochi::h3 {
namespace {

// Every size is a JSON integer and every epsilon / theta a number (weights/config_fields.h): a
// config with "hidden_size": 24.5 is refused by name instead of read as 24.
Status read_field(const nlohmann::json& j, const char* key, int64_t& out) { return weights::read_int_field(j, key, out); }
Status read_field(const nlohmann::json& j, const char* key, double& out) { return weights::read_double_field(j, key, out); }

// The original release's transformer/config.json (class MiniMaxH3DiTModel, MiniMax-AI/MiniMax-H3
// @8d8824e FL2VA/ and Ref2VA/) names seven fields its own way and leaves freq_dim, rope_freq_dim and
// rope_theta out: each original name maps onto diffusers' (a config holding both must agree).
constexpr std::pair<const char*, const char*> kOriginalFieldNames[] = {
    {"token_refiner_num_layers", "num_refiner_layers"}, {"ffn_hidden_size", "ffn_dim"},
    {"latents_dim", "in_channels"},                     {"audio_latents_dim", "audio_in_channels"},
    {"timestep_input_dim", "freq_dim"},                 {"time_embed_hidden_size", "time_embed_hidden_dim"},
    {"rope_inv_freq_len", "rope_freq_dim"}};

Expected<nlohmann::json> with_diffusers_names(const nlohmann::json& j) {
  nlohmann::json out = j;
  for (const auto& [original, diffusers] : kOriginalFieldNames) {
    auto it = j.find(original);
    if (it == j.end()) continue;
    if (auto d = j.find(diffusers); d != j.end() && *d != *it)
      return invalid_argument(std::string("config.json: '") + original + "' (" + it->dump() + ") and '" + diffusers +
                              "' (" + d->dump() + ") name one field and disagree");
    out[diffusers] = *it;
  }
  return out;
}

}  // namespace

Expected<H3Config> H3Config::from_json(const nlohmann::json& json) {
  if (!json.is_object()) return invalid_argument("config.json must hold a JSON object");
  if (auto it = json.find("_class_name"); it != json.end() && it->is_string() &&
                                           *it != "MiniMaxH3Transformer3DModel" && *it != "MiniMaxH3DiTModel")
    return invalid_argument("config.json describes a '" + it->get<std::string>() +
                            "', not a MiniMaxH3Transformer3DModel (or the release's MiniMaxH3DiTModel): point at "
                            "the transformer/ folder");
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json j, with_diffusers_names(json));
  H3Config c;
  OROCHI_RETURN_IF_ERROR(read_field(j, "num_attention_heads", c.num_attention_heads));
  OROCHI_RETURN_IF_ERROR(read_field(j, "attention_head_dim", c.attention_head_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "hidden_size", c.hidden_size));
  OROCHI_RETURN_IF_ERROR(read_field(j, "num_layers", c.num_layers));
  OROCHI_RETURN_IF_ERROR(read_field(j, "num_refiner_layers", c.num_refiner_layers));
  OROCHI_RETURN_IF_ERROR(read_field(j, "ffn_dim", c.ffn_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "in_channels", c.in_channels));
  OROCHI_RETURN_IF_ERROR(read_field(j, "audio_in_channels", c.audio_in_channels));
  OROCHI_RETURN_IF_ERROR(read_field(j, "text_dim", c.text_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "freq_dim", c.freq_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "time_embed_hidden_dim", c.time_embed_hidden_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "time_embed_dim", c.time_embed_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "rope_freq_dim", c.rope_freq_dim));
  OROCHI_RETURN_IF_ERROR(read_field(j, "rope_theta", c.rope_theta));
  OROCHI_RETURN_IF_ERROR(read_field(j, "norm_eps", c.norm_eps));
  OROCHI_RETURN_IF_ERROR(read_field(j, "qk_norm_eps", c.qk_norm_eps));
  OROCHI_RETURN_IF_ERROR(read_field(j, "final_norm_eps", c.final_norm_eps));
  std::vector<int64_t> patch(c.patch_size.begin(), c.patch_size.end());
  OROCHI_RETURN_IF_ERROR(weights::read_int_list_field(j, "patch_size", patch, 3));  // (t, h, w)
  for (int i = 0; i < 3; ++i) c.patch_size[i] = patch[i];
  // The release states its AdaLN widths; they follow from hidden_size (6 modulations x 3 modalities;
  // final shift | scale), so a config whose numbers disagree describes another model.
  int64_t adaln = 18 * c.hidden_size, final_adaln = 2 * c.hidden_size;
  OROCHI_RETURN_IF_ERROR(read_field(j, "adaln_out_features", adaln));
  OROCHI_RETURN_IF_ERROR(read_field(j, "final_adaln_out_features", final_adaln));
  if (adaln != 18 * c.hidden_size || final_adaln != 2 * c.hidden_size)
    return invalid_argument("config.json: adaln_out_features " + std::to_string(adaln) + " / final_adaln_out_features " +
                            std::to_string(final_adaln) + " are not 18 / 2 x hidden_size " +
                            std::to_string(c.hidden_size) + ": not a MiniMax-H3 transformer config");
  OROCHI_RETURN_IF_ERROR(c.validate().with_context("config.json"));
  return c;
}

Status H3Config::validate() const {
  const int64_t positive[] = {num_attention_heads, attention_head_dim, hidden_size, num_layers,
                              ffn_dim, in_channels, audio_in_channels, text_dim, freq_dim,
                              time_embed_hidden_dim, time_embed_dim, rope_freq_dim,
                              patch_size[0], patch_size[1], patch_size[2]};
  for (int64_t v : positive)
    if (v <= 0 || v > (int64_t{1} << 24))
      return invalid_argument("every size must be a positive integer below 2^24, got " + std::to_string(v));
  if (num_refiner_layers < 0) return invalid_argument("num_refiner_layers must be >= 0");
  if (rotary_dim() > attention_head_dim)
    return invalid_argument("6 * rope_freq_dim (" + std::to_string(rotary_dim()) +
                            ") exceeds attention_head_dim (" + std::to_string(attention_head_dim) + ")");
  if (freq_dim % 2 != 0) return invalid_argument("freq_dim must be even");
  if (!(norm_eps > 0 && qk_norm_eps > 0 && final_norm_eps > 0 && rope_theta > 1))
    return invalid_argument("norm epsilons must be > 0 and rope_theta > 1");
  return Status::ok();
}

std::string H3Config::summary() const {
  std::ostringstream os;
  os << "  blocks " << num_layers << " (+" << num_refiner_layers << " text refiner), hidden "
     << hidden_size << ", heads " << num_attention_heads << " x " << attention_head_dim
     << " (inner " << inner_dim() << "), SwiGLU " << ffn_dim << "\n"
     << "  video rows " << video_patch_dim() << " ch (" << in_channels << " x patch " << patch_size[0]
     << "x" << patch_size[1] << "x" << patch_size[2] << "), audio rows " << audio_in_channels
     << " ch, text " << text_dim << " ch\n"
     << "  timestep: sinusoid " << freq_dim << " -> " << time_embed_hidden_dim << " -> "
     << time_embed_dim << "; RoPE " << rope_freq_dim << " freqs/axis (" << rotary_dim()
     << " channels rotated), theta " << rope_theta << "\n";
  return os.str();
}

H3Config H3Config::tiny_demo() {
  H3Config c;
  c.num_attention_heads = 2;
  c.attention_head_dim = 16;
  c.hidden_size = 32;
  c.num_layers = 4;
  c.num_refiner_layers = 2;
  c.ffn_dim = 64;
  c.in_channels = 4;
  c.audio_in_channels = 8;
  c.text_dim = 16;
  c.freq_dim = 16;
  c.time_embed_hidden_dim = 32;
  c.time_embed_dim = 16;
  c.rope_freq_dim = 2;
  return c;
}

}  // namespace orochi::h3
