#include "models/h3/checkpoint_layout.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include "weights/model_folder.h"
#include "weights/scaled_fp8.h"

namespace orochi::h3 {
namespace {

constexpr const char* kPrefixes[] = {"", "model.diffusion_model.", "diffusion_model.", "transformer."};
// Present in the original release but recomputed here, so allowed and ignored.
constexpr const char* kIgnoredOriginalKeys[] = {"rope.inv_freq"};

// Replaces the first occurrence of `from` (if any) with `to`.
bool replace_once(std::string& s, const char* from, const char* to) {
  const size_t at = s.find(from);
  if (at == std::string::npos) return false;
  s.replace(at, std::strlen(from), to);
  return true;
}

// "…attn.to_q.weight" -> 0, to_k -> 1, to_v -> 2, else -1.
int qkv_part(const std::string& name) {
  if (name.find(".attn.to_q.") != std::string::npos) return 0;
  if (name.find(".attn.to_k.") != std::string::npos) return 1;
  if (name.find(".attn.to_v.") != std::string::npos) return 2;
  return -1;
}

std::string fused_qkv_key(const std::string& name) {
  std::string k = original_key(name);
  replace_once(k, ".attn.to_q.", ".attn.qkv_proj.") || replace_once(k, ".attn.to_k.", ".attn.qkv_proj.") ||
      replace_once(k, ".attn.to_v.", ".attn.qkv_proj.");
  return k;
}

// The one shape and dtype check of a stored parameter: loading (read_checked) and `orochi inspect`
// (check_parameter_shapes, headers only) refuse the same tensors with the same words.
Status check_stored(const std::string& key, const Shape& stored, DType dtype, const Shape& shape) {
  if (stored != shape)
    return shape_mismatch(key + " has shape " + shape_to_string(stored) + ", expected " +
                          shape_to_string(shape) + " for this config.json: wrong model or config?");
  if (!dtype_is_float(dtype)) return shape_mismatch(key + " is " + dtype_name(dtype) + ", expected a float type");
  return Status::ok();
}

Expected<Tensor> read_checked(const weights::Checkpoint& ckpt, const std::string& key, const Shape& shape,
                              bool as_stored) {
  OROCHI_ASSIGN_OR_RETURN(Tensor t, ckpt.get(key));
  OROCHI_RETURN_IF_ERROR(check_stored(key, t.shape(), t.dtype(), shape));
  if (weights::is_fp8(t.dtype())) {
    // f32 for the CPU; for the upload bf16, the bits the upload of the f32 copy would give, in half
    // the host memory (the codes stay in the file: the upload does not apply scales).
    OROCHI_ASSIGN_OR_RETURN(Tensor deq, weights::dequantize_scaled_fp8(ckpt, key, t));
    return as_stored ? deq.to(DType::kBF16) : deq;
  }
  OROCHI_RETURN_IF_ERROR(weights::check_comfy_quant(ckpt, key, t.dtype()));
  return as_stored ? t : t.to(DType::kF32);
}

// Where a diffusers parameter is stored and with which shape: the fused q/k/v of the original
// release holds the three parts of every head.
std::pair<std::string, Shape> stored_key_and_shape(const KeyLayout& layout, const ParamSpec& spec,
                                                   const H3Config& config) {
  if (layout.flavor == KeyFlavor::kDiffusers) return {layout.prefix + spec.name, spec.shape};
  if (qkv_part(spec.name) >= 0)
    return {layout.prefix + fused_qkv_key(spec.name),
            Shape{3 * config.num_attention_heads * config.attention_head_dim, spec.shape[1]}};
  return {layout.prefix + original_key(spec.name), spec.shape};
}

}  // namespace

const char* qkv_order_name(QkvOrder order) { return order == QkvOrder::kThirds ? "thirds" : "interleaved"; }

std::string KeyLayout::describe() const {
  std::string s = flavor == KeyFlavor::kDiffusers ? "diffusers names" : "original release names";
  if (!prefix.empty()) s += " under prefix '" + prefix + "'";
  if (flavor == KeyFlavor::kOriginal) s += std::string(", fused qkv ") + qkv_order_name(qkv);
  return s;
}

Tensor fused_qkv_part(const Tensor& fused_in, int part, QkvOrder order, int64_t heads, int64_t hd) {
  const Tensor fused = fused_in.contiguous();
  const int64_t cols = fused.numel() / fused.dim(0);
  Shape shape = fused.shape();
  shape[0] = heads * hd;
  Tensor out = Tensor::uninitialized(shape, fused.dtype());
  const size_t block = static_cast<size_t>(hd * cols) * dtype_size(fused.dtype());  // one head's part
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t from = order == QkvOrder::kInterleaved ? h * 3 + part : part * heads + h;
    std::memcpy(static_cast<char*>(out.raw_data()) + h * block,
                static_cast<const char*>(fused.raw_data()) + from * block, block);
  }
  return out;
}

Tensor swap_row_halves(const Tensor& in) {
  const Tensor t = in.contiguous();
  const size_t half = t.nbytes() / 2;
  Tensor swapped = Tensor::uninitialized(t.shape(), t.dtype());
  std::memcpy(swapped.raw_data(), static_cast<const char*>(t.raw_data()) + half, half);
  std::memcpy(static_cast<char*>(swapped.raw_data()) + half, t.raw_data(), half);
  return swapped;
}

std::string QkvDetection::describe() const {
  return "fused qkv order over " + std::to_string(layers) + " layers: " + std::to_string(votes_interleaved) +
         " vote(s) for per-head interleaved, " + std::to_string(votes_thirds) + " for contiguous thirds -> " +
         (order ? qkv_order_name(*order) : "ambiguous");
}

namespace {

// F ratio of the blocks' log RMS between the three kinds over within a kind, for `kind_of(block)`.
double kind_score(const std::vector<double>& log_rms, const std::function<int(int64_t)>& kind_of) {
  double mean[3] = {0, 0, 0}, count[3] = {0, 0, 0}, all = 0;
  for (size_t b = 0; b < log_rms.size(); ++b) {
    mean[kind_of(static_cast<int64_t>(b))] += log_rms[b];
    count[kind_of(static_cast<int64_t>(b))] += 1;
    all += log_rms[b];
  }
  all /= static_cast<double>(log_rms.size());
  double between = 0, within = 0;
  for (int k = 0; k < 3; ++k) {
    mean[k] /= count[k];
    between += count[k] * (mean[k] - all) * (mean[k] - all);
  }
  for (size_t b = 0; b < log_rms.size(); ++b) {
    const double d = log_rms[b] - mean[kind_of(static_cast<int64_t>(b))];
    within += d * d;
  }
  const double n = static_cast<double>(log_rms.size());
  return (between / 2.0) / (within / (n - 3.0) + 1e-12);
}

}  // namespace

Expected<QkvDetection> detect_qkv_order(const weights::Checkpoint& ckpt, const KeyLayout& layout,
                                        const H3Config& config) {
  constexpr double kMinScore = 8.0, kMinRatio = 8.0;
  QkvDetection d;
  const int64_t heads = config.num_attention_heads, hd = config.attention_head_dim;
  std::vector<std::string> keys;
  for (int64_t i = 0; i < config.num_refiner_layers; ++i)
    keys.push_back(layout.prefix + "token_refiner.blocks." + std::to_string(i) + ".attn.qkv_proj.weight");
  for (int64_t i = 0; i < config.num_layers; ++i)
    keys.push_back(layout.prefix + "blocks." + std::to_string(i) + ".attn.qkv_proj.weight");
  if (heads == 1) {  // the two orders are the same rows
    d.order = QkvOrder::kInterleaved;
    return d;
  }
  for (const std::string& key : keys) {
    OROCHI_ASSIGN_OR_RETURN(Tensor fused, read_checked(ckpt, key, Shape{3 * heads * hd, config.hidden_size}, false));
    const float* w = fused.data<float>();
    const int64_t per_block = hd * config.hidden_size;
    std::vector<double> log_rms(static_cast<size_t>(3 * heads));
    for (int64_t b = 0; b < 3 * heads; ++b) {
      double ss = 0;
      for (int64_t i = 0; i < per_block; ++i) ss += static_cast<double>(w[b * per_block + i]) * w[b * per_block + i];
      log_rms[static_cast<size_t>(b)] = 0.5 * std::log(ss / static_cast<double>(per_block) + 1e-30);
    }
    const double inter = kind_score(log_rms, [](int64_t b) { return static_cast<int>(b % 3); });
    const double thirds = kind_score(log_rms, [heads](int64_t b) { return static_cast<int>(b / heads); });
    ++d.layers;
    if (inter >= kMinScore && inter >= kMinRatio * thirds) ++d.votes_interleaved;
    if (thirds >= kMinScore && thirds >= kMinRatio * inter) ++d.votes_thirds;
  }
  if (d.votes_interleaved * 2 >= d.layers && d.votes_thirds == 0 && d.layers > 0) d.order = QkvOrder::kInterleaved;
  if (d.votes_thirds * 2 >= d.layers && d.votes_interleaved == 0 && d.layers > 0) d.order = QkvOrder::kThirds;
  return d;
}

Expected<KeyLayout> detect_key_layout(const weights::Checkpoint& ckpt) {
  for (const char* prefix : kPrefixes) {
    const std::string p = prefix;
    if (ckpt.contains(p + "proj_in.weight") && ckpt.contains(p + "transformer_blocks.0.norm1.weight"))
      return KeyLayout{KeyFlavor::kDiffusers, p};
    if (ckpt.contains(p + "video_patch_proj.weight")) return KeyLayout{KeyFlavor::kOriginal, p};
  }
  std::string sample;
  const auto names = ckpt.names();
  for (size_t i = 0; i < names.size() && i < 5; ++i) sample += (i ? ", " : "") + names[i];
  return invalid_argument("'" + ckpt.path() +
                          "' is not a MiniMax-H3 transformer checkpoint: found neither proj_in.weight "
                          "(diffusers) nor video_patch_proj.weight (original release); its keys begin " +
                          (sample.empty() ? std::string("(none)") : sample));
}

std::string original_key(const std::string& name) {
  std::string k = name;
  static constexpr std::pair<const char*, const char*> kHeads[] = {
      {"proj_in.", "video_patch_proj."},
      {"audio_proj_in.", "audio_patch_proj."},
      {"context_embedder.", "condition_proj."},
      {"time_embedder.linear_1.", "time_embedder.proj_in."},
      {"time_embedder.linear_2.", "time_embedder.proj_out."},
      {"token_refiner.refiner_blocks.", "token_refiner.blocks."},
      {"transformer_blocks.", "blocks."},
      {"norm_out.norm.", "final_layer.norm."},
      {"norm_out.linear.", "final_layer.adaln_proj.linear."},
      {"proj_out.", "final_layer.video_out."},
      {"audio_proj_out.", "final_layer.audio_out."},
  };
  for (const auto& [from, to] : kHeads) {
    if (k.starts_with(from)) {
      k = to + k.substr(std::strlen(from));
      break;
    }
  }
  static constexpr std::pair<const char*, const char*> kInner[] = {
      {".attn.norm_q.", ".attn.q_norm."}, {".attn.norm_k.", ".attn.k_norm."},
      {".attn.to_out.0.", ".attn.out_proj."}, {".ff.net.0.proj.", ".mlp.fc1."},
      {".ff.net.2.", ".mlp.fc2."},
  };
  for (const auto& [from, to] : kInner) replace_once(k, from, to);
  return k;
}

std::vector<std::string> expected_checkpoint_keys(const KeyLayout& layout, const H3Config& config) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const ParamSpec& spec : h3_parameters(config)) {
    std::string k = layout.flavor == KeyFlavor::kDiffusers
                        ? spec.name
                        : (qkv_part(spec.name) >= 0 ? fused_qkv_key(spec.name) : original_key(spec.name));
    if (seen.insert(k).second) keys.push_back(layout.prefix + k);
  }
  return keys;
}

Status check_checkpoint_keys(const weights::Checkpoint& ckpt, const KeyLayout& layout,
                             const H3Config& config) {
  std::vector<std::string> present;
  for (const std::string& name : ckpt.names()) {
    bool ignored = false;
    if (layout.flavor == KeyFlavor::kOriginal)
      for (const char* k : kIgnoredOriginalKeys) ignored |= name == layout.prefix + k;
    ignored |= weights::is_scaled_fp8_companion(name);
    if (!ignored) present.push_back(name);
  }
  return weights::check_key_set(present, expected_checkpoint_keys(layout, config),
                                "transformer checkpoint '" + ckpt.path() + "'");
}

Status check_parameter_shapes(const weights::Checkpoint& ckpt, const KeyLayout& layout, const H3Config& config) {
  for (const ParamSpec& spec : h3_parameters(config)) {
    const auto [key, shape] = stored_key_and_shape(layout, spec, config);
    const weights::TensorInfo* info = ckpt.info(key);
    if (info == nullptr) continue;  // check_checkpoint_keys names the missing keys
    OROCHI_RETURN_IF_ERROR(check_stored(key, info->shape, info->dtype, shape));
  }
  return Status::ok();
}

Expected<Tensor> read_parameter(const weights::Checkpoint& ckpt, const KeyLayout& layout,
                                const ParamSpec& spec, const H3Config& config, bool as_stored) {
  if (layout.flavor == KeyFlavor::kDiffusers) return read_checked(ckpt, layout.prefix + spec.name, spec.shape, as_stored);

  const int part = qkv_part(spec.name);
  if (part >= 0) {
    // Fused [heads x (q | k | v) x head_dim, in]: take this part's head_dim rows of every head.
    const int64_t heads = config.num_attention_heads, hd = config.attention_head_dim, in = spec.shape[1];
    OROCHI_ASSIGN_OR_RETURN(Tensor fused, read_checked(ckpt, layout.prefix + fused_qkv_key(spec.name),
                                                       {3 * heads * hd, in}, as_stored));
    return fused_qkv_part(fused, part, layout.qkv, heads, hd);
  }
  OROCHI_ASSIGN_OR_RETURN(Tensor t, read_checked(ckpt, layout.prefix + original_key(spec.name), spec.shape, as_stored));
  // Original fc1 rows are [gate; value]; diffusers' SwiGLU reads [value; gate].
  if (spec.name.find(".ff.net.0.proj.") != std::string::npos) return swap_row_halves(t);
  return t;
}

}  // namespace orochi::h3
