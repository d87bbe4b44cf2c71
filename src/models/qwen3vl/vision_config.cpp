#include "models/qwen3vl/vision_config.h"

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "weights/config_fields.h"

namespace orochi::qwen3vl {
namespace {

// The shared typed reads (weights/config_fields.h), naming the object the field is in.
Status read_int(const nlohmann::json& j, const char* key, int64_t& out) {
  return weights::read_int_field(j, key, out).with_context("vision_config");
}
Status read_int_list(const nlohmann::json& j, const char* key, std::vector<int64_t>& out) {
  return weights::read_int_list_field(j, key, out).with_context("vision_config");
}

Status read_activation(const nlohmann::json& j, VisionActivation& out) {
  auto it = j.find("hidden_act");
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_string()) return invalid_argument("config.json: vision_config 'hidden_act' must be a string");
  const std::string act = it->get<std::string>();
  if (act == "gelu_pytorch_tanh") {
    out = VisionActivation::kGeluTanh;
  } else if (act == "gelu") {
    out = VisionActivation::kGeluErf;
  } else {
    return unsupported("config.json: vision_config hidden_act '" + act +
                       "' is not supported (Qwen3-VL uses \"gelu_pytorch_tanh\"; \"gelu\" also runs)");
  }
  return Status::ok();
}

Status read_rope(const nlohmann::json& v, double& theta) {
  if (auto it = v.find("rope_theta"); it != v.end() && !it->is_null()) {
    if (!it->is_number()) return invalid_argument("config.json: vision_config 'rope_theta' must be a number");
    theta = it->get<double>();
  }
  auto it = v.find("rope_parameters");
  if (it == v.end() || it->is_null()) return Status::ok();
  if (!it->is_object()) return invalid_argument("config.json: vision_config 'rope_parameters' must be an object");
  if (auto t = it->find("rope_type"); t != it->end() && !t->is_null() && !(t->is_string() && *t == "axial"))
    return unsupported("config.json: vision_config rope_type " + t->dump() +
                       " is not supported (Qwen3-VL's vision tower uses \"axial\")");
  if (auto t = it->find("rope_theta"); t != it->end() && !t->is_null()) {
    if (!t->is_number()) return invalid_argument("config.json: vision_config rope_parameters.rope_theta must be a number");
    theta = t->get<double>();
  }
  return Status::ok();
}

// The vision fields: nested under "vision_config" (Qwen3VLConfig) or the object itself.
Expected<const nlohmann::json*> vision_fields(const nlohmann::json& j) {
  const std::string model_type =
      j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (auto it = j.find("vision_config"); it != j.end()) {
    if (!it->is_object())
      return invalid_argument("config.json: \"vision_config\" must be an object (Qwen3VLConfig's vision tower)");
    if (!model_type.empty() && model_type != "qwen3_vl")
      return invalid_argument("config.json describes a '" + model_type +
                              "' model, not Qwen3-VL (qwen3_vl): point at the text_encoder/ folder");
    return &*it;
  }
  if (model_type == "qwen3_vl_vision") return &j;
  if (j.contains("text_config") || model_type == "qwen3_vl_text")
    return invalid_argument(
        "config.json has no \"vision_config\" object: this Qwen3-VL checkpoint has no vision tower "
        "(images and videos need the full Qwen3VLConfig)");
  if (!j.contains("depth") && !j.contains("deepstack_visual_indexes"))
    return invalid_argument(
        "config.json has no \"vision_config\" object and is not a Qwen3-VL vision config (no 'depth' or "
        "'deepstack_visual_indexes'): point at the text_encoder/ folder");
  return &j;
}

bool is_perfect_square(int64_t n, int64_t& side) {
  side = 0;
  while ((side + 1) * (side + 1) <= n) ++side;
  return side * side == n;
}

}  // namespace

int64_t VisionConfig::position_grid_side() const {
  int64_t side = 0;
  is_perfect_square(num_position_embeddings, side);
  return side;
}

Expected<VisionConfig> VisionConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("config.json must hold a JSON object");
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json* v, vision_fields(j));
  VisionConfig c;
  OROCHI_RETURN_IF_ERROR(read_int(*v, "depth", c.depth));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "hidden_size", c.hidden_size));
  OROCHI_RETURN_IF_ERROR(read_activation(*v, c.hidden_act));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "intermediate_size", c.intermediate_size));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "num_heads", c.num_heads));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "in_channels", c.in_channels));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "patch_size", c.patch_size));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "spatial_merge_size", c.spatial_merge_size));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "temporal_patch_size", c.temporal_patch_size));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "out_hidden_size", c.out_hidden_size));
  OROCHI_RETURN_IF_ERROR(read_int(*v, "num_position_embeddings", c.num_position_embeddings));
  OROCHI_RETURN_IF_ERROR(read_int_list(*v, "deepstack_visual_indexes", c.deepstack_visual_indexes));
  OROCHI_RETURN_IF_ERROR(read_rope(*v, c.rope_theta));
  if (c.in_channels != 3)
    return unsupported("config.json: vision_config in_channels " + std::to_string(c.in_channels) +
                       " is not supported (the processor makes RGB patches: 3 channels)");
  OROCHI_RETURN_IF_ERROR(c.validate().with_context("config.json vision_config"));
  return c;
}

Status VisionConfig::validate() const {
  const int64_t sizes[] = {depth,          hidden_size,         intermediate_size,   num_heads,
                           in_channels,    patch_size,          spatial_merge_size,  temporal_patch_size,
                           out_hidden_size, num_position_embeddings};
  for (int64_t v : sizes)
    if (v <= 0 || v > (int64_t{1} << 24))
      return invalid_argument("every size must be a positive integer below 2^24, got " + std::to_string(v));
  if (hidden_size % num_heads != 0)
    return invalid_argument("hidden_size (" + std::to_string(hidden_size) + ") must be a multiple of num_heads (" +
                            std::to_string(num_heads) + ")");
  // The 2-D RoPE gives each of row and column a quarter of the head: head_dim / 4 frequencies each.
  if (head_dim() % 4 != 0)
    return invalid_argument("head_dim (" + std::to_string(head_dim()) +
                            ") must be a multiple of 4 for the vision tower's 2-D rotary embedding");
  int64_t side = 0;
  if (!is_perfect_square(num_position_embeddings, side))
    return invalid_argument("num_position_embeddings (" + std::to_string(num_position_embeddings) +
                            ") must be a square: the learned position table is a side x side grid");
  if (!(rope_theta > 0)) return invalid_argument("rope_theta must be positive");
  std::set<int64_t> seen;
  for (int64_t i : deepstack_visual_indexes) {
    if (i < 0 || i >= depth)
      return invalid_argument("deepstack_visual_indexes entry " + std::to_string(i) + " is not a block in [0, " +
                              std::to_string(depth) + ")");
    if (!seen.insert(i).second)
      return invalid_argument("deepstack_visual_indexes lists block " + std::to_string(i) + " twice");
  }
  return Status::ok();
}

std::string VisionConfig::summary() const {
  std::ostringstream os;
  os << "  vision blocks " << depth << ", hidden " << hidden_size << ", heads " << num_heads << " x "
     << head_dim() << ", MLP " << intermediate_size
     << (hidden_act == VisionActivation::kGeluTanh ? " (tanh GELU)" : " (erf GELU)") << "\n"
     << "  patch " << patch_size << " x " << patch_size << " x " << temporal_patch_size << " frames, merge "
     << spatial_merge_size << "x" << spatial_merge_size << " -> " << out_hidden_size << ", positions "
     << position_grid_side() << "x" << position_grid_side() << ", DeepStack after blocks [";
  for (size_t i = 0; i < deepstack_visual_indexes.size(); ++i)
    os << (i ? ", " : "") << deepstack_visual_indexes[i];
  os << "]\n";
  return os.str();
}

VisionConfig VisionConfig::qwen3vl_32b() {
  VisionConfig c;
  c.depth = 27;
  c.hidden_size = 1152;
  c.hidden_act = VisionActivation::kGeluTanh;
  c.intermediate_size = 4304;
  c.num_heads = 16;
  c.in_channels = 3;
  c.patch_size = 16;
  c.spatial_merge_size = 2;
  c.temporal_patch_size = 2;
  c.out_hidden_size = 5120;
  c.num_position_embeddings = 2304;
  c.deepstack_visual_indexes = {8, 16, 24};
  return c;
}

}  // namespace orochi::qwen3vl
