#include "models/h3/lora.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/dtype.h"
#include "models/h3/checkpoint_layout.h"

namespace orochi::h3 {
namespace {

// How a module of the file lands on our parameters.
enum class Fold { kPlain, kQkv, kSwapHalves };

struct Target {
  Fold fold = Fold::kPlain;
  std::vector<std::string> params;  // one, or to_q/to_k/to_v for a fused qkv
  Shape shape;                      // the module's [out, in] (a norm's [size]) as the file stores it
  bool original = false;            // reached by an original (release / ComfyUI) name
  bool linear = true;               // false: a norm, which takes .diff deltas but no LoRA pair
};

std::string strip_weight(const std::string& name) { return name.substr(0, name.size() - std::strlen(".weight")); }

std::string underscored(std::string s) {
  for (char& c : s)
    if (c == '.') c = '_';
  return s;
}

// Module name (diffusers or original, dotted) -> target, for every linear of the config.
std::map<std::string, Target> module_targets(const H3Config& config) {
  std::map<std::string, Target> out;
  const int64_t qkv_rows = 3 * config.inner_dim();
  for (const ParamSpec& spec : h3_parameters(config)) {
    if (spec.shape.size() == 1 && spec.name.ends_with(".weight")) {  // a norm
      const std::string orig = strip_weight(original_key(spec.name));
      out[strip_weight(spec.name)] = Target{Fold::kPlain, {spec.name}, spec.shape, false, false};
      if (orig != strip_weight(spec.name)) out[orig] = Target{Fold::kPlain, {spec.name}, spec.shape, true, false};
      continue;
    }
    if (spec.shape.size() != 2 || !spec.name.ends_with(".weight")) continue;
    out[strip_weight(spec.name)] = Target{Fold::kPlain, {spec.name}, spec.shape, false};
    bool qkv = false;
    for (const char* part : {".attn.to_q.", ".attn.to_k.", ".attn.to_v."}) {
      const size_t at = spec.name.find(part);
      if (at == std::string::npos) continue;
      qkv = true;
      const std::string fused = spec.name.substr(0, at) + ".attn.qkv_proj.weight";
      Target& t = out[strip_weight(original_key(fused))];
      t.fold = Fold::kQkv;
      t.params.push_back(spec.name);  // h3_parameters lists q, k, v in this order
      t.shape = {qkv_rows, spec.shape[1]};
      t.original = true;
    }
    const std::string orig = strip_weight(original_key(spec.name));
    if (qkv || orig == strip_weight(spec.name)) continue;
    const bool fc1 = spec.name.find(".ff.net.0.proj.") != std::string::npos;
    out[orig] = Target{fc1 ? Fold::kSwapHalves : Fold::kPlain, {spec.name}, spec.shape, true};
  }
  return out;
}

struct Prefix {
  const char* text;
  std::optional<LoraPartition> partition;  // none: either (the file does not say)
};
constexpr Prefix kPeftPrefixes[] = {
    {"transformer_ref.", LoraPartition::kTransformerRef}, {"transformer.", LoraPartition::kTransformer},
    {"model.diffusion_model.", std::nullopt}, {"diffusion_model.", std::nullopt}, {"", std::nullopt}};
constexpr Prefix kKohyaPrefixes[] = {{"lora_unet_", std::nullopt}, {"lora_transformer_", std::nullopt}};

const char* partition_folder(LoraPartition p) {
  return p == LoraPartition::kTransformer ? "transformer/ (t2va, fl2va)" : "transformer_ref/ (ref2va)";
}

// B [3·heads·hd, r] of a fused qkv -> the part's [heads·hd, r], per-head interleaved or in thirds
// (the checkpoints' split, checkpoint_layout.h).
Tensor qkv_part(const Tensor& up, int part, bool interleaved, const H3Config& c) {
  return fused_qkv_part(up, part, interleaved ? QkvOrder::kInterleaved : QkvOrder::kThirds, c.num_attention_heads,
                        c.attention_head_dim);
}

}  // namespace

const char* lora_format_name(LoraFormat f) {
  switch (f) {
    case LoraFormat::kDiffusers: return "diffusers";
    case LoraFormat::kOriginal: return "original/ComfyUI";
    case LoraFormat::kDiffSynth: return "DiffSynth";
    case LoraFormat::kKohya: return "kohya/musubi";
  }
  return "?";
}

std::optional<LoraPartition> declared_partition(const weights::LoraFile& file) {
  if (file.suffixes == weights::LoraSuffixes::kKohya) return std::nullopt;
  auto of = [](const std::string& module) -> std::optional<LoraPartition> {
    for (const Prefix& p : kPeftPrefixes)
      if (module.starts_with(p.text)) return p.partition;
    return std::nullopt;
  };
  for (const weights::LoraPair& p : file.pairs)
    if (std::optional<LoraPartition> named = of(p.module)) return named;
  for (const weights::LoraDiff& d : file.diffs)
    if (std::optional<LoraPartition> named = of(d.module)) return named;
  return std::nullopt;
}

Expected<H3Lora> map_lora(const weights::LoraFile& file, const H3Config& config, LoraPartition partition) {
  const std::map<std::string, Target> targets = module_targets(config);
  std::map<std::string, const Target*> kohya_targets;
  for (const auto& [name, t] : targets) kohya_targets[underscored(name)] = &t;
  const std::string where = "LoRA '" + file.path + "'";

  H3Lora out;
  out.path = file.path;
  out.format = file.suffixes == weights::LoraSuffixes::kKohya         ? LoraFormat::kKohya
               : file.suffixes == weights::LoraSuffixes::kPeftDefault ? LoraFormat::kDiffSynth
                                                                       : LoraFormat::kDiffusers;
  // The target of a file's module name (its format's prefixes), or an error naming `key`.
  auto find_target = [&](const std::string& module, const std::string& key, bool linear) -> Expected<const Target*> {
    const Target* target = nullptr;
    if (file.suffixes == weights::LoraSuffixes::kKohya) {
      for (const Prefix& p : kKohyaPrefixes)
        if (module.starts_with(p.text)) {
          auto it = kohya_targets.find(module.substr(std::strlen(p.text)));
          if (it != kohya_targets.end()) target = it->second;
          break;
        }
    } else {
      for (const Prefix& p : kPeftPrefixes) {
        if (!module.starts_with(p.text)) continue;
        auto it = targets.find(module.substr(std::strlen(p.text)));
        if (it == targets.end()) continue;
        if (p.partition && *p.partition != partition)
          return invalid_argument(where + ": '" + key + "' targets " + partition_folder(*p.partition) +
                                  ", but this model is " + partition_folder(partition));
        target = &it->second;
        break;
      }
    }
    if (!target || (linear && !target->linear))
      return invalid_argument(
          where + ": '" + key + "' (module '" + module + "') matches no " + (linear ? "linear layer" : "layer") +
          " of this model; expected a module such as " +
          (file.suffixes == weights::LoraSuffixes::kKohya
               ? std::string("lora_unet_blocks_0_attn_qkv_proj or lora_unet_transformer_blocks_0_attn_to_q")
               : std::string("transformer.transformer_blocks.0.attn.to_q or diffusion_model.blocks.0.attn.qkv_proj")) +
          " (blocks 0.." + std::to_string(config.num_layers - 1) + ")");
    if (target->original && out.format == LoraFormat::kDiffusers) out.format = LoraFormat::kOriginal;
    return target;
  };
  // DiffSynth trains on the release's per-head interleaved module; the original/ComfyUI and kohya/musubi
  // files on [q_all; k_all; v_all] (diffusers' _convert_non_diffusers_minimax_h3_lora_to_diffusers).
  const bool interleaved = file.suffixes == weights::LoraSuffixes::kPeftDefault;
  // Rows of a fused module's tensor (B, or a full-rank delta) in our parameters' order.
  auto unfold = [&](const Target& target, const Tensor& rows) {
    switch (target.fold) {
      case Fold::kPlain: break;
      case Fold::kQkv: {
        std::vector<Tensor> parts;
        for (int part = 0; part < 3; ++part) parts.push_back(qkv_part(rows, part, interleaved, config));
        return parts;
      }
      case Fold::kSwapHalves: return std::vector<Tensor>{swap_row_halves(rows)};  // [gate; value] -> [value; gate]
    }
    return std::vector<Tensor>{rows};
  };

  std::map<std::string, std::string> taken;  // param -> key that targets it
  for (const weights::LoraPair& pair : file.pairs) {
    OROCHI_ASSIGN_OR_RETURN(const Target* target, find_target(pair.module, pair.up_key, true));

    const int64_t r = pair.rank(), out_rows = target->shape[0], in = target->shape[1];
    if (pair.down.dim(1) != in)
      return shape_mismatch(where + ": '" + pair.down_key + "' has shape " + shape_to_string(pair.down.shape()) +
                            ", expected [rank, " + std::to_string(in) + "] for a layer of shape " +
                            shape_to_string(target->shape) + ": a LoRA for another model?");
    if (pair.up.dim(0) != out_rows)
      return shape_mismatch(where + ": '" + pair.up_key + "' has shape " + shape_to_string(pair.up.shape()) +
                            ", expected [" + std::to_string(out_rows) + ", " + std::to_string(r) +
                            "] for a layer of shape " + shape_to_string(target->shape) + ": a LoRA for another model?");
    const Tensor down = pair.down.to(DType::kF32);
    const std::vector<Tensor> ups = unfold(*target, pair.up.to(DType::kF32));
    for (size_t i = 0; i < ups.size(); ++i) {
      const std::string& param = target->params[i];
      if (auto [it, fresh] = taken.emplace(param, pair.up_key); !fresh)
        return invalid_argument(where + ": '" + pair.up_key + "' and '" + it->second + "' both target " + param);
      out.deltas.push_back(LoraDelta{param, pair.up_key, down, ups[i], pair.scale()});
    }
  }

  std::set<std::string> biases;
  for (const ParamSpec& spec : h3_parameters(config))
    if (spec.name.ends_with(".bias")) biases.insert(spec.name);
  std::map<std::string, std::string> diffed;  // param -> .diff key that targets it
  for (const weights::LoraDiff& diff : file.diffs) {
    OROCHI_ASSIGN_OR_RETURN(const Target* target, find_target(diff.module, diff.key, false));
    const Shape want = diff.bias ? Shape{target->shape[0]} : target->shape;
    if (diff.delta.shape() != want)
      return shape_mismatch(where + ": '" + diff.key + "' has shape " + shape_to_string(diff.delta.shape()) +
                            ", expected " + shape_to_string(want) + " (the " + (diff.bias ? "bias" : "weight") +
                            " of module '" + diff.module + "', shape " + shape_to_string(target->shape) + ")");
    const std::vector<Tensor> parts = unfold(*target, diff.delta.to(DType::kF32));
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string param = target->params[i];
      if (diff.bias) {
        param = strip_weight(param) + ".bias";
        if (!biases.count(param))
          return invalid_argument(where + ": '" + diff.key + "' is a bias delta, but " + strip_weight(target->params[i]) +
                                  " has no bias in this model");
      }
      if (auto [it, fresh] = diffed.emplace(param, diff.key); !fresh)
        return invalid_argument(where + ": '" + diff.key + "' and '" + it->second + "' both target " + param);
      out.full.push_back(FullDelta{param, diff.key, parts[i]});
    }
  }
  return out;
}

size_t changed_parameters(const H3Lora& lora) {
  std::set<std::string> params;
  for (const LoraDelta& d : lora.deltas) params.insert(d.param);
  for (const FullDelta& d : lora.full) params.insert(d.param);
  return params.size();
}

Expected<H3Lora> read_lora(const std::string& path, const H3Config& config, LoraPartition partition) {
  OROCHI_ASSIGN_OR_RETURN(weights::LoraFile file, weights::read_lora_file(path));
  return map_lora(file, config, partition);
}

std::vector<std::pair<std::string, Tensor*>> linear_weights(H3Weights& w) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (auto& [name, layer] : linear_layers(w)) out.emplace_back(name, &layer->weight);
  return out;
}

std::vector<std::pair<std::string, LinearWeights*>> linear_layers(H3Weights& w) {
  std::vector<std::pair<std::string, LinearWeights*>> out;
  auto add = [&](const std::string& name, LinearWeights& l) { out.emplace_back(name + ".weight", &l); };
  add("proj_in", w.proj_in);
  add("audio_proj_in", w.audio_proj_in);
  add("context_embedder", w.context_embedder);
  if (w.time_linear_1.weight.defined()) {  // not in the curve form
    add("time_embedder.linear_1", w.time_linear_1);
    add("time_embedder.linear_2", w.time_linear_2);
  }
  auto block = [&](const std::string& p, BlockWeights& b) {
    add(p + "attn.to_q", b.attn.to_q);
    add(p + "attn.to_k", b.attn.to_k);
    add(p + "attn.to_v", b.attn.to_v);
    add(p + "attn.to_out.0", b.attn.to_out);
    add(p + "ff.net.0.proj", b.ff_in);
    add(p + "ff.net.2", b.ff_out);
    if (b.adaln.weight.defined()) add(p + "adaln_proj.linear", b.adaln);
  };
  for (size_t i = 0; i < w.refiner.size(); ++i) block("token_refiner.refiner_blocks." + std::to_string(i) + ".", w.refiner[i]);
  for (size_t i = 0; i < w.blocks.size(); ++i) block("transformer_blocks." + std::to_string(i) + ".", w.blocks[i]);
  add("norm_out.linear", w.norm_out_linear);
  add("proj_out", w.proj_out);
  add("audio_proj_out", w.audio_proj_out);
  return out;
}

namespace {

// Every tensor a full-rank delta may target by its diffusers name: linear weights and biases, norms.
std::map<std::string, Tensor*> delta_targets(H3Weights& w) {
  std::map<std::string, Tensor*> out;
  for (auto& [name, l] : linear_layers(w)) {
    out[name] = &l->weight;
    if (l->bias.defined()) out[strip_weight(name) + ".bias"] = &l->bias;
  }
  auto norms = [&](const std::string& p, BlockWeights& b) {
    out[p + "norm1.weight"] = &b.norm1;
    out[p + "norm2.weight"] = &b.norm2;
    out[p + "attn.norm_q.weight"] = &b.attn.norm_q;
    out[p + "attn.norm_k.weight"] = &b.attn.norm_k;
  };
  for (size_t i = 0; i < w.refiner.size(); ++i) norms("token_refiner.refiner_blocks." + std::to_string(i) + ".", w.refiner[i]);
  for (size_t i = 0; i < w.blocks.size(); ++i) norms("transformer_blocks." + std::to_string(i) + ".", w.blocks[i]);
  out["token_refiner.final_norm.weight"] = &w.refiner_final_norm;
  out["norm_out.norm.weight"] = &w.norm_out;
  return out;
}

// param += strength · delta for every full-rank delta, into a fresh tensor (the stored one may be a
// read-only view of a file): bf16 stays bf16, rounded once from the f32 sum; anything else is f32.
Status merge_full_deltas(H3Weights& weights, const H3Lora& lora, float strength) {
  if (lora.full.empty()) return Status::ok();
  const std::map<std::string, Tensor*> targets = delta_targets(weights);
  for (const FullDelta& d : lora.full) {
    auto it = targets.find(d.param);
    if (it == targets.end())
      return invalid_argument("LoRA '" + lora.path + "': '" + d.source + "' targets " + d.param +
                              ", which these weights do not hold");
    Tensor& t = *it->second;
    OROCHI_CHECK(t.shape() == d.delta.shape(), "full-rank delta shape for " + d.param);
    const bool bf16 = t.dtype() == DType::kBF16;
    const Tensor base = bf16 ? t.contiguous() : t.to(DType::kF32);
    Tensor merged = Tensor::empty(t.shape(), bf16 ? DType::kBF16 : DType::kF32);
    const float* delta = d.delta.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (bf16)
        merged.data<uint16_t>()[i] = f32_to_bf16(bf16_to_f32(base.data<uint16_t>()[i]) + strength * delta[i]);
      else
        merged.data<float>()[i] = base.data<float>()[i] + strength * delta[i];
    }
    t = std::move(merged);
  }
  return Status::ok();
}

}  // namespace

Status attach_lora(H3Weights& weights, const H3Lora& lora, float strength) {
  if (!std::isfinite(strength))
    return invalid_argument("LoRA '" + lora.path + "': strength " + std::to_string(strength) + " is not finite");
  if (strength == 0.0f) return Status::ok();
  std::map<std::string, LinearWeights*> by_name;
  for (auto& [name, l] : linear_layers(weights)) by_name[name] = l;
  for (const LoraDelta& d : lora.deltas) {
    auto it = by_name.find(d.param);
    if (it == by_name.end())
      return invalid_argument("LoRA '" + lora.path + "': '" + d.source + "' targets " + d.param +
                              ", which these weights do not hold");
    const Tensor& w = it->second->weight;
    OROCHI_CHECK(d.up.dim(0) == w.dim(0) && d.down.dim(1) == w.dim(1), "LoRA delta shape for " + d.param);
    it->second->adapters.push_back(LoraAdapter{d.down, d.up, strength * d.scale});
  }
  return merge_full_deltas(weights, lora, strength);
}

Status merge_lora(H3Weights& weights, const H3Lora& lora, float strength) {
  if (!std::isfinite(strength))
    return invalid_argument("LoRA '" + lora.path + "': strength " + std::to_string(strength) + " is not finite");
  if (strength == 0.0f) return Status::ok();
  std::map<std::string, Tensor*> by_name;
  for (auto& [name, t] : linear_weights(weights)) by_name[name] = t;
  for (const LoraDelta& d : lora.deltas) {
    auto it = by_name.find(d.param);
    if (it == by_name.end())
      return invalid_argument("LoRA '" + lora.path + "': '" + d.source + "' targets " + d.param +
                              ", which these weights do not hold");
    Tensor& w = *it->second;
    const int64_t rows = w.dim(0), cols = w.dim(1), r = d.down.dim(0);
    OROCHI_CHECK(d.up.dim(0) == rows && d.down.dim(1) == cols && d.up.dim(1) == r, "LoRA delta shape for " + d.param);
    // A fresh tensor (the stored one may be a read-only view of a file) in the stored precision:
    // bf16 weights (the GPU path's zero-copy views) stay bf16, rounded once from the f32 sum, which is
    // what uploading an f32 merge would round to; everything else merges in f32.
    const bool bf16 = w.dtype() == DType::kBF16;
    const Tensor base = bf16 ? w.contiguous() : w.to(DType::kF32);
    Tensor merged = Tensor::empty(w.shape(), bf16 ? DType::kBF16 : DType::kF32);
    const float s = strength * d.scale;
    const float* A = d.down.data<float>();  // [r, cols]
    const float* B = d.up.data<float>();    // [rows, r]
    // Rows are independent (same sums in the same order on any thread count): the 50 blocks' merge
    // of a rank-64 LoRA is ~2 TFLOP, minutes on one core.
#pragma omp parallel
    {
      std::vector<float> row(static_cast<size_t>(cols));
#pragma omp for schedule(static)
      for (int64_t o = 0; o < rows; ++o) {
        // row = (B·A)[o, :], then W[o, :] + s · row: the same rounding as W + s·(B·A) computed apart.
        std::fill(row.begin(), row.end(), 0.0f);
        for (int64_t k = 0; k < r; ++k) {
          const float b = B[o * r + k];
          const float* a = A + k * cols;
          for (int64_t i = 0; i < cols; ++i) row[i] += b * a[i];
        }
        if (bf16) {
          const uint16_t* wi = base.data<uint16_t>() + o * cols;
          uint16_t* wo = merged.data<uint16_t>() + o * cols;
          for (int64_t i = 0; i < cols; ++i) wo[i] = f32_to_bf16(bf16_to_f32(wi[i]) + s * row[i]);
        } else {
          const float* wi = base.data<float>() + o * cols;
          float* wo = merged.data<float>() + o * cols;
          for (int64_t i = 0; i < cols; ++i) wo[i] = wi[i] + s * row[i];
        }
      }
    }
    w = std::move(merged);
  }
  return merge_full_deltas(weights, lora, strength);
}

}  // namespace orochi::h3
