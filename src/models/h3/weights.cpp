#include "models/h3/weights.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "core/log.h"
#include "models/h3/adaln_curve.h"
#include "models/h3/checkpoint_layout.h"
#include "weights/model_folder.h"
#include "weights/parameter_collector.h"

namespace orochi::h3 {
namespace {

// The H3 parameters by their diffusers names, grouped as the forward uses them.
class Collector : public weights::ParameterCollector<ParamSpec> {
 public:
  Collector(const ParamSource& source, const H3Config& config) : ParameterCollector(source, h3_parameters(config)) {}
  LinearWeights linear(const std::string& name, bool bias) {
    LinearWeights l;
    l.weight = take(name + ".weight");
    if (bias) l.bias = take(name + ".bias");
    return l;
  }
  BlockWeights block(const std::string& p, bool with_adaln) {
    BlockWeights b;
    b.norm1 = take(p + "norm1.weight");
    b.norm2 = take(p + "norm2.weight");
    b.attn.to_q = linear(p + "attn.to_q", false);
    b.attn.to_k = linear(p + "attn.to_k", false);
    b.attn.to_v = linear(p + "attn.to_v", false);
    b.attn.to_out = linear(p + "attn.to_out.0", false);
    b.attn.norm_q = take(p + "attn.norm_q.weight");
    b.attn.norm_k = take(p + "attn.norm_k.weight");
    b.ff_in = linear(p + "ff.net.0.proj", false);
    b.ff_out = linear(p + "ff.net.2", false);
    if (with_adaln) b.adaln = linear(p + "adaln_proj.linear", true);
    return b;
  }
};

}  // namespace

Expected<H3Weights> assemble_weights(const H3Config& config, const ParamSource& source) {
  Collector c(source, config);
  H3Weights w;
  w.config = config;
  w.proj_in = c.linear("proj_in", true);
  w.audio_proj_in = c.linear("audio_proj_in", true);
  w.context_embedder = c.linear("context_embedder", true);
  if (config.adaln_curve_points > 0) {
    w.adaln_t_table = c.take("adaln_t_table");
  } else {
    w.time_linear_1 = c.linear("time_embedder.linear_1", true);
    w.time_linear_2 = c.linear("time_embedder.linear_2", true);
  }
  for (int64_t i = 0; i < config.num_refiner_layers; ++i)
    w.refiner.push_back(c.block("token_refiner.refiner_blocks." + std::to_string(i) + ".", false));
  w.refiner_final_norm = c.take("token_refiner.final_norm.weight");
  for (int64_t i = 0; i < config.num_layers; ++i)
    w.blocks.push_back(c.block("transformer_blocks." + std::to_string(i) + ".", true));
  w.norm_out = c.take("norm_out.norm.weight");
  w.norm_out_linear = c.linear("norm_out.linear", true);
  w.proj_out = c.linear("proj_out", true);
  w.audio_proj_out = c.linear("audio_proj_out", true);
  if (!c.status().is_ok()) return c.status();
  return w;
}

Expected<H3Weights> load_weights(const std::string& folder, bool as_stored) {
  OROCHI_ASSIGN_OR_RETURN(weights::ModelFolder model, weights::ModelFolder::open(folder));
  OROCHI_ASSIGN_OR_RETURN(H3Config config, H3Config::from_json(model.config));
  OROCHI_ASSIGN_OR_RETURN(KeyLayout layout, detect_key_layout(model.weights));
  OROCHI_RETURN_IF_ERROR(check_checkpoint_keys(model.weights, layout, config));
  log_debug("loading ", folder, " (", layout.describe(), ")");
  return assemble_weights(config, [&](const ParamSpec& spec) {
    return read_parameter(model.weights, layout, spec, config, as_stored);
  });
}

Expected<std::pair<H3Config, std::string>> transformer_file_config(const std::string& path,
                                                                   const std::optional<std::string>& config_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return not_found("--transformer " + path + ": no such file (a single-file .safetensors transformer, as ComfyUI "
                     "keeps in models/diffusion_models/)");
  std::string from = config_path.value_or("");
  if (from.empty()) {
    const fs::path beside = fs::path(path).parent_path() / "config.json";
    if (fs::is_regular_file(beside, ec)) from = beside.string();
  }
  H3Config config;
  if (from.empty()) {
    from = "the released MiniMax-H3 config";
  } else {
    std::ifstream in(from);
    if (!in) return not_found("transformer config " + from + " cannot be read");
    nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
    if (json.is_discarded() || !json.is_object()) return corrupt_file("transformer config " + from + " is not a JSON object");
    Expected<H3Config> read = H3Config::from_json(json);
    if (!read) return Status(read.status().code(), from + ": " + read.status().message());
    config = *read;
  }
  // A pruned file's curve-form AdaLN is found by its table's key, and its G and r by the table's
  // shape (headers only): no config states them.
  OROCHI_ASSIGN_OR_RETURN(const weights::Checkpoint ckpt, weights::Checkpoint::open(path));
  OROCHI_ASSIGN_OR_RETURN(const KeyLayout layout, detect_key_layout(ckpt));
  if (has_adaln_curve(ckpt, layout)) OROCHI_RETURN_IF_ERROR(apply_adaln_curve(ckpt, layout, config));
  return std::make_pair(config, from);
}

Expected<TransformerFile> load_transformer_file(const std::string& path, const TransformerFileOptions& options) {
  OROCHI_ASSIGN_OR_RETURN(auto config_and_from, transformer_file_config(path, options.config_path));
  const H3Config config = config_and_from.first;
  OROCHI_ASSIGN_OR_RETURN(weights::Checkpoint ckpt, weights::Checkpoint::open(path));
  OROCHI_ASSIGN_OR_RETURN(KeyLayout layout, detect_key_layout(ckpt));
  for (const Status& s : {check_checkpoint_keys(ckpt, layout, config), check_parameter_shapes(ckpt, layout, config)})
    if (!s.is_ok())
      return Status(s.code(), s.message() + " (checked against " + config_and_from.second +
                                  "; --transformer-config FILE names another)");
  std::string how;
  if (layout.flavor == KeyFlavor::kOriginal) {
    if (options.qkv_order) {
      layout.qkv = *options.qkv_order;
      how = " (as given)";
    } else {
      OROCHI_ASSIGN_OR_RETURN(const QkvDetection d, detect_qkv_order(ckpt, layout, config));
      if (!d.order)
        return invalid_argument(
            path + ": cannot tell the fused qkv order (per-head interleaved or contiguous thirds; shapes do not "
                   "say): " + d.describe() + ", from the log RMS of each layer's q/k/v blocks. Pass --qkv-order "
                   "interleaved (the original release, DiffSynth) or --qkv-order thirds (ComfyUI)");
      layout.qkv = *d.order;
      how = " (detected: " + d.describe() + ")";
    }
  }
  TransformerFile out;
  out.config_from = config_and_from.second;
  out.layout = layout.describe() + how;
  if (config.adaln_curve_points > 0) out.layout += "; " + describe_adaln_curve(config);
  log_debug("loading ", path, " (", out.layout, ", config from ", out.config_from, ")");
  OROCHI_ASSIGN_OR_RETURN(out.weights, assemble_weights(config, [&](const ParamSpec& spec) {
                            return read_parameter(ckpt, layout, spec, config, options.as_stored);
                          }));
  return out;
}

Expected<std::optional<QkvOrder>> parse_qkv_order(const std::string& text) {
  if (text == "auto") return std::optional<QkvOrder>();
  if (text == "interleaved") return std::optional<QkvOrder>(QkvOrder::kInterleaved);
  if (text == "thirds") return std::optional<QkvOrder>(QkvOrder::kThirds);
  return usage_error("--qkv-order takes auto, interleaved or thirds, got '" + text + "'");
}

void emulate_quantization(H3Weights& weights, Precision precision, bool fp8_attention) {
  // Every block linear asks the one list (is_quantized_linear) by its diffusers name.
  auto mark = [&](std::vector<BlockWeights>& blocks, const std::string& prefix) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      BlockWeights& b = blocks[i];
      const std::string p = prefix + std::to_string(i) + ".";
      const std::pair<const char*, LinearWeights*> linears[] = {
          {"attn.to_q", &b.attn.to_q}, {"attn.to_k", &b.attn.to_k}, {"attn.to_v", &b.attn.to_v},
          {"attn.to_out.0", &b.attn.to_out}, {"ff.net.0.proj", &b.ff_in}, {"ff.net.2", &b.ff_out}};
      for (const auto& [name, l] : linears)
        l->emulated_codes = precision != Precision::kBf16 && is_quantized_linear(p + name + ".weight")
                                ? precision_weight_dtype(precision)
                                : DType::kF32;
      b.attn.emulated_fp8 = fp8_attention;
    }
  };
  mark(weights.refiner, "token_refiner.refiner_blocks.");
  mark(weights.blocks, "transformer_blocks.");
}

H3Weights random_weights(const H3Config& config, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto source = [&](const ParamSpec& spec) -> Expected<Tensor> {
    const bool is_norm = param_group_of(spec.name) == ParamGroup::kNorm;
    const bool is_bias = spec.name.size() > 5 && spec.name.compare(spec.name.size() - 5, 5, ".bias") == 0;
    std::normal_distribution<float> dist(is_norm ? 1.0f : 0.0f, is_norm ? 0.1f : (is_bias ? 0.05f : 0.2f));
    Tensor t = Tensor::empty(spec.shape, DType::kF32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    return t;
  };
  Expected<H3Weights> w = assemble_weights(config, source);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

}  // namespace orochi::h3
