#include "models/qwen3vl/vision_weights.h"

#include "core/log.h"
#include "weights/checked_reader.h"
#include "weights/model_folder.h"

namespace orochi::qwen3vl {
namespace {

// Tried in order; the first under which "patch_embed.proj.weight" exists wins.
constexpr const char* kPrefixes[] = {"model.visual.", "visual.", ""};

Expected<std::string> detect_prefix(const weights::Checkpoint& ckpt) {
  for (const char* p : kPrefixes)
    if (ckpt.contains(std::string(p) + "patch_embed.proj.weight")) return std::string(p);
  std::string sample;
  const auto names = ckpt.names();
  for (size_t i = 0; i < names.size() && i < 5; ++i) sample += (i ? ", " : "") + names[i];
  return invalid_argument("'" + ckpt.path() +
                          "' has no Qwen3-VL vision tower: no model.visual.patch_embed.proj.weight (nor "
                          "visual.patch_embed.proj.weight, patch_embed.proj.weight); its keys begin " +
                          (sample.empty() ? std::string("(none)") : sample));
}

Status check_keys(const weights::Checkpoint& ckpt, const std::string& prefix,
                  const std::vector<std::string>& expected) {
  std::vector<std::string> present;
  for (const std::string& name : ckpt.names()) {
    if (!name.starts_with(prefix)) continue;
    // With an empty prefix the other components would be "under" it; keep them out by name.
    if (prefix.empty() && (name.starts_with("model.") || name.starts_with("lm_head.") ||
                           name.starts_with("language_model.") || name.starts_with("visual.")))
      continue;
    // The rotary table is a non-persistent buffer; some exports carry it anyway. It is recomputed.
    if (name.substr(prefix.size()).starts_with("rotary_pos_emb.")) continue;
    present.push_back(name);
  }
  return weights::check_key_set(present, expected, "Qwen3-VL vision tower in '" + ckpt.path() + "'");
}

// The checked reader (weights/checked_reader.h) with this model's composite parts.
class Reader : public weights::CheckedReader {
 public:
  Reader(const weights::Checkpoint& ckpt, const std::string& prefix, std::vector<std::string>& loaded)
      : CheckedReader(ckpt, prefix, "this config.json's vision_config", "the vision tower", loaded) {}

  VisionLinear linear(const std::string& name, int64_t out, int64_t in) {
    VisionLinear l;
    l.weight = take(name + ".weight", {out, in});
    l.bias = take(name + ".bias", {out});
    return l;
  }
  VisionNorm norm(const std::string& name, int64_t width) {
    VisionNorm n;
    n.weight = take(name + ".weight", {width});
    n.bias = take(name + ".bias", {width});
    return n;
  }
  VisionMergerWeights merger(const std::string& name, const VisionConfig& c, bool after_shuffle) {
    VisionMergerWeights m;
    m.norm_after_shuffle = after_shuffle;
    m.norm = norm(name + ".norm", after_shuffle ? c.merged_width() : c.hidden_size);
    m.fc1 = linear(name + ".linear_fc1", c.merged_width(), c.merged_width());
    m.fc2 = linear(name + ".linear_fc2", c.out_hidden_size, c.merged_width());
    return m;
  }
};

std::string block_name(int64_t i, const char* rest) { return "blocks." + std::to_string(i) + "." + rest; }

void add_linear(std::vector<std::string>& keys, const std::string& name) {
  keys.push_back(name + ".weight");
  keys.push_back(name + ".bias");
}

void add_merger(std::vector<std::string>& keys, const std::string& name) {
  for (const char* part : {".norm", ".linear_fc1", ".linear_fc2"}) add_linear(keys, name + part);
}

}  // namespace

std::vector<std::string> vision_weight_keys(const std::string& prefix, const VisionConfig& c) {
  std::vector<std::string> keys;
  add_linear(keys, prefix + "patch_embed.proj");
  keys.push_back(prefix + "pos_embed.weight");
  for (int64_t i = 0; i < c.depth; ++i)
    for (const char* part : {"norm1", "attn.qkv", "attn.proj", "norm2", "mlp.linear_fc1", "mlp.linear_fc2"})
      add_linear(keys, prefix + block_name(i, part));
  add_merger(keys, prefix + "merger");
  for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k)
    add_merger(keys, prefix + "deepstack_merger_list." + std::to_string(k));
  return keys;
}

Expected<VisionWeights> load_vision_weights(const weights::Checkpoint& ckpt, const VisionConfig& c) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  OROCHI_ASSIGN_OR_RETURN(std::string prefix, detect_prefix(ckpt));
  OROCHI_RETURN_IF_ERROR(check_keys(ckpt, prefix, vision_weight_keys(prefix, c)));

  VisionWeights w;
  w.config = c;
  w.prefix = prefix;
  Reader r(ckpt, w.prefix, w.loaded_keys);
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  // Same order as vision_weight_keys().
  w.patch_embed.weight =
      r.take("patch_embed.proj.weight", {H, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size});
  w.patch_embed.bias = r.take("patch_embed.proj.bias", {H});
  if (r.status().is_ok()) w.patch_embed.weight = w.patch_embed.weight.view({H, c.patch_values()});
  w.pos_embed = r.take("pos_embed.weight", {c.num_position_embeddings, H});
  for (int64_t i = 0; i < c.depth && r.status().is_ok(); ++i) {
    VisionBlockWeights b;
    b.norm1 = r.norm(block_name(i, "norm1"), H);
    b.qkv = r.linear(block_name(i, "attn.qkv"), 3 * H, H);
    b.proj = r.linear(block_name(i, "attn.proj"), H, H);
    b.norm2 = r.norm(block_name(i, "norm2"), H);
    b.fc1 = r.linear(block_name(i, "mlp.linear_fc1"), I, H);
    b.fc2 = r.linear(block_name(i, "mlp.linear_fc2"), H, I);
    w.blocks.push_back(std::move(b));
  }
  w.merger = r.merger("merger", c, /*after_shuffle=*/false);
  for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k)
    w.deepstack_mergers.push_back(r.merger("deepstack_merger_list." + std::to_string(k), c, /*after_shuffle=*/true));
  if (!r.status().is_ok()) return r.status();
  return w;
}

Expected<VisionWeights> load_vision_weights(const std::string& folder) {
  OROCHI_ASSIGN_OR_RETURN(weights::ModelFolder model, weights::ModelFolder::open(folder));
  OROCHI_ASSIGN_OR_RETURN(VisionConfig config, VisionConfig::from_json(model.config));
  Expected<VisionWeights> w = load_vision_weights(model.weights, config);
  if (w)
    log_debug("Qwen3-VL vision: ", w->loaded_keys.size(), " tensors of ", model.weights.size(), " read from ",
              folder, " (prefix '", w->prefix, "')");
  return w;
}

}  // namespace orochi::qwen3vl
