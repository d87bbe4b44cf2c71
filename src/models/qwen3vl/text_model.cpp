#include "models/qwen3vl/text_model.h"

#include <algorithm>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_llm.h"
#include "core/quantize.h"

namespace orochi::qwen3vl {
namespace {

void notify(const TextObserver& observer, const std::string& name, const Tensor& t) {
  if (observer) observer(name, t);
}

// fp32 for the ops: an f32 view is used in place, any other dtype is converted (one layer at a time).
Tensor f32(const Tensor& t) { return t.dtype() == DType::kF32 && t.is_contiguous() ? t : t.to(DType::kF32); }

// One layer's weights in fp32, alive only while the layer runs.
struct LayerF32 {
  explicit LayerF32(const TextLayerWeights& w)
      : input_norm(f32(w.input_layernorm)),
        post_norm(f32(w.post_attention_layernorm)),
        q(f32(w.q_proj)),
        k(f32(w.k_proj)),
        v(f32(w.v_proj)),
        o(f32(w.o_proj)),
        q_norm(f32(w.q_norm)),
        k_norm(f32(w.k_norm)),
        gate(f32(w.gate_proj)),
        up(f32(w.up_proj)),
        down(f32(w.down_proj)) {}
  Tensor input_norm, post_norm, q, k, v, o, q_norm, k_norm, gate, up, down;
};

// y = x · weight^T: the f32 reference, or (emulate_quantization) the GPU's quantized linear on the
// layer's stored weight.
Tensor linear(const Tensor& x, const Tensor& weight_f32, const Tensor& stored, DType emulated_codes) {
  if (emulated_codes == DType::kF32) return cpu::linear(x, weight_f32);
  return emulated_quantized_linear(x, stored, nullptr, emulated_codes);
}

// x [L, hidden] (already normed) -> attention branch [L, hidden].
Tensor self_attention(const Tensor& x, const LayerF32& w, const TextLayerWeights& stored, DType codes,
                      const TextConfig& c, const cpu::RopeTable& rope) {
  const int64_t L = x.dim(0), D = c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  // Per-head RMSNorm over head_dim, before RoPE.
  Tensor q = cpu::rms_norm(linear(x, w.q, stored.q_proj, codes).view({L, c.num_attention_heads, D}), w.q_norm,
                           eps);  // [L, Hq, D]
  Tensor k = cpu::rms_norm(linear(x, w.k, stored.k_proj, codes).view({L, c.num_key_value_heads, D}), w.k_norm,
                           eps);                                                       // [L, Hkv, D]
  Tensor v = linear(x, w.v, stored.v_proj, codes).view({L, c.num_key_value_heads, D});  // [L, Hkv, D]
  cpu::apply_rope(q, rope);
  cpu::apply_rope(k, rope);
  Tensor o = cpu::causal_attention_gqa(q, k, v).view({L, c.q_dim()});  // [L, Hq·D]
  return linear(o, w.o, stored.o_proj, codes);                         // [L, hidden]
}

// In place over the residual stream h [L, hidden].
void decoder_layer(Tensor& h, const TextLayerWeights& weights, DType codes, const TextConfig& c,
                   const cpu::RopeTable& rope) {
  const LayerF32 w(weights);
  const float eps = static_cast<float>(c.rms_norm_eps);
  cpu::add_inplace(h, self_attention(cpu::rms_norm(h, w.input_norm, eps), w, weights, codes, c, rope));
  const Tensor x = cpu::rms_norm(h, w.post_norm, eps);  // [L, hidden]
  const Tensor act = cpu::silu_mul(linear(x, w.gate, weights.gate_proj, codes),
                                   linear(x, w.up, weights.up_proj, codes));  // [L, I]
  cpu::add_inplace(h, linear(act, w.down, weights.down_proj, codes));          // [L, hidden]
}

// rows[i] of h [L, hidden] += add[i] ([V, hidden]), or = add[i] when `replace`.
void scatter_rows(Tensor& h, const std::vector<int64_t>& rows, const Tensor& values, bool replace) {
  const Tensor v = f32(values);
  const int64_t C = h.dim(1);
  float* dst = h.data<float>();
  const float* src = v.data<float>();
  for (size_t i = 0; i < rows.size(); ++i) {
    float* out = dst + rows[i] * C;
    const float* in = src + static_cast<int64_t>(i) * C;
    if (replace) std::copy(in, in + C, out);
    else for (int64_t c = 0; c < C; ++c) out[c] += in[c];
  }
}

Status check_features(const Tensor& t, int64_t rows, int64_t hidden, const std::string& what) {
  if (!t.defined() || t.ndim() != 2 || t.dim(0) != rows || t.dim(1) != hidden || !dtype_is_float(t.dtype()))
    return shape_mismatch(what + " must be float [" + std::to_string(rows) + ", " + std::to_string(hidden) +
                          "] (one row per vision pad token), got " +
                          (t.defined() ? t.describe() : std::string("nothing")));
  return Status::ok();
}

}  // namespace

Expected<VisionEmbeddings> vision_embeddings(const std::vector<MmTokenType>& types, int64_t hidden,
                                             const Tensor& image_features,
                                             const std::vector<Tensor>& image_deepstack,
                                             const Tensor& video_features,
                                             const std::vector<Tensor>& video_deepstack) {
  std::vector<int64_t> image_rows, video_rows;
  VisionEmbeddings out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == MmTokenType::kText) continue;
    (types[i] == MmTokenType::kImage ? image_rows : video_rows).push_back(static_cast<int64_t>(i));
    out.rows.push_back(static_cast<int64_t>(i));
  }
  const int64_t NI = static_cast<int64_t>(image_rows.size()), NV = static_cast<int64_t>(video_rows.size());
  const bool images = NI > 0, videos = NV > 0;
  if (images) OROCHI_RETURN_IF_ERROR(check_features(image_features, NI, hidden, "the image features"));
  if (videos) OROCHI_RETURN_IF_ERROR(check_features(video_features, NV, hidden, "the video features"));
  if (!images && image_features.defined() && image_features.numel() > 0)
    return shape_mismatch("image features were given but the sequence has no image pad token");
  if (!videos && video_features.defined() && video_features.numel() > 0)
    return shape_mismatch("video features were given but the sequence has no video pad token");
  if (images && videos && image_deepstack.size() != video_deepstack.size())
    return invalid_argument("the images have " + std::to_string(image_deepstack.size()) +
                            " DeepStack features and the videos " + std::to_string(video_deepstack.size()) +
                            "; one vision tower gives both the same number");
  for (size_t k = 0; k < image_deepstack.size() && images; ++k)
    OROCHI_RETURN_IF_ERROR(check_features(image_deepstack[k], NI, hidden, "image DeepStack feature " +
                                                                              std::to_string(k)));
  for (size_t k = 0; k < video_deepstack.size() && videos; ++k)
    OROCHI_RETURN_IF_ERROR(check_features(video_deepstack[k], NV, hidden, "video DeepStack feature " +
                                                                              std::to_string(k)));
  const int64_t V = NI + NV;
  if (V == 0) return out;

  // Sequence order: the i-th image pad row takes image row i, the j-th video pad row video row j.
  auto merge = [&](const Tensor& image, const Tensor& video) {
    Tensor joint = Tensor::empty({V, hidden}, DType::kF32);  // [V, hidden]
    const Tensor im = images ? f32(image) : Tensor(), vi = videos ? f32(video) : Tensor();
    float* dst = joint.data<float>();
    int64_t ii = 0, vv = 0;
    for (int64_t r = 0; r < V; ++r) {
      const bool is_image = types[static_cast<size_t>(out.rows[static_cast<size_t>(r)])] == MmTokenType::kImage;
      const float* src = is_image ? im.data<float>() + (ii++) * hidden : vi.data<float>() + (vv++) * hidden;
      std::copy(src, src + hidden, dst + r * hidden);
    }
    return joint;
  };
  out.features = merge(image_features, video_features);
  const size_t depth = images ? image_deepstack.size() : video_deepstack.size();
  for (size_t k = 0; k < depth; ++k)
    out.deepstack.push_back(merge(images ? image_deepstack[k] : Tensor(), videos ? video_deepstack[k] : Tensor()));
  return out;
}

Status validate_vision(const VisionEmbeddings& vision, int64_t num_tokens, int64_t hidden) {
  const int64_t V = static_cast<int64_t>(vision.rows.size());
  for (int64_t i = 0; i < V; ++i) {
    const int64_t r = vision.rows[static_cast<size_t>(i)];
    if (r < 0 || r >= num_tokens || (i > 0 && r <= vision.rows[static_cast<size_t>(i - 1)]))
      return invalid_argument("vision row " + std::to_string(r) + " (entry " + std::to_string(i) +
                              ") is outside the " + std::to_string(num_tokens) +
                              "-token sequence or not ascending");
  }
  if (V == 0) return Status::ok();
  OROCHI_RETURN_IF_ERROR(check_features(vision.features, V, hidden, "the vision features"));
  for (size_t k = 0; k < vision.deepstack.size(); ++k)
    OROCHI_RETURN_IF_ERROR(check_features(vision.deepstack[k], V, hidden, "DeepStack feature " + std::to_string(k)));
  return Status::ok();
}

Status validate_token_ids(const TextConfig& c, const Tensor& ids) {
  if (!ids.defined() || ids.dtype() != DType::kI64 || ids.ndim() != 1)
    return shape_mismatch("token ids must be i64 [L], got " +
                          (ids.defined() ? ids.describe() : std::string("nothing")));
  if (ids.numel() == 0)
    return invalid_argument("the prompt is empty (0 tokens); Qwen3-VL needs at least one token to encode");
  const Tensor dense = ids.contiguous();
  const int64_t* p = dense.data<int64_t>();
  for (int64_t i = 0; i < dense.numel(); ++i)
    if (p[i] < 0 || p[i] >= c.vocab_size)
      return invalid_argument("token id " + std::to_string(p[i]) + " at position " + std::to_string(i) +
                              " is outside the vocabulary [0, " + std::to_string(c.vocab_size) +
                              "); was the prompt tokenized with this model's tokenizer?");
  return Status::ok();
}

Status validate_positions(const Tensor& positions, int64_t num_tokens) {
  if (!positions.defined() || positions.dtype() != DType::kI64 || positions.ndim() != 2 ||
      positions.dim(0) != num_tokens || positions.dim(1) != 3)
    return shape_mismatch("positions must be i64 [" + std::to_string(num_tokens) + ", 3] (t, h, w), got " +
                          (positions.defined() ? positions.describe() : std::string("nothing")));
  return Status::ok();
}

Tensor text_positions(int64_t num_tokens) {
  std::vector<int64_t> p(static_cast<size_t>(3 * num_tokens));
  for (int64_t i = 0; i < num_tokens; ++i) p[3 * i] = p[3 * i + 1] = p[3 * i + 2] = i;
  return Tensor::from_ints(p, {num_tokens, 3});
}

Expected<Tensor> embed_tokens(const TextWeights& w, const Tensor& token_ids) {
  OROCHI_RETURN_IF_ERROR(validate_token_ids(w.config, token_ids));
  return cpu::embedding_lookup(w.embed_tokens, token_ids.contiguous());  // [L, hidden]
}

Expected<Tensor> run_decoder(const TextWeights& w, const Tensor& hidden, const Tensor& positions,
                             const TextObserver& observer, const VisionEmbeddings* vision) {
  const TextConfig& c = w.config;
  if (!hidden.defined() || hidden.dtype() != DType::kF32 || hidden.ndim() != 2 ||
      hidden.dim(1) != c.hidden_size)
    return shape_mismatch("decoder input must be f32 [L, " + std::to_string(c.hidden_size) + "], got " +
                          (hidden.defined() ? hidden.describe() : std::string("nothing")));
  if (hidden.dim(0) == 0) return invalid_argument("the decoder input has no rows");
  OROCHI_RETURN_IF_ERROR(validate_positions(positions, hidden.dim(0)));
  if (vision) OROCHI_RETURN_IF_ERROR(validate_vision(*vision, hidden.dim(0), c.hidden_size));

  const Tensor inv_freq =
      cpu::rope_inv_freq(static_cast<int>(c.rope_freq_slots()), static_cast<float>(c.rope_theta));
  const cpu::RopeTable rope = cpu::mrope_interleaved_table(positions.contiguous(), inv_freq, c.mrope_section);
  notify(observer, "rope.cos", rope.cos);
  notify(observer, "rope.sin", rope.sin);

  Tensor h = hidden.clone();  // [L, hidden] residual stream
  notify(observer, "hidden_states.0", h);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    decoder_layer(h, w.layers[i], w.emulated_codes, c, rope);
    notify(observer, "hidden_states." + std::to_string(i + 1), h);
    // DeepStack: after the observer, as transformers records the layer's output before the add.
    if (vision && !vision->empty() && i < vision->deepstack.size() && i + 1 < w.layers.size())
      scatter_rows(h, vision->rows, vision->deepstack[i], /*replace=*/false);
  }
  return h;
}

Expected<Tensor> encode(const TextWeights& w, const Tensor& token_ids, const Tensor& positions,
                        const TextObserver& observer) {
  OROCHI_ASSIGN_OR_RETURN(Tensor embeddings, embed_tokens(w, token_ids));
  return run_decoder(w, embeddings, positions, observer);
}

Expected<Tensor> encode_mixed(const TextWeights& w, const Tensor& token_ids, const Tensor& positions,
                              const VisionEmbeddings& vision, const TextObserver& observer) {
  OROCHI_ASSIGN_OR_RETURN(Tensor embeddings, embed_tokens(w, token_ids));  // [L, hidden]
  OROCHI_RETURN_IF_ERROR(validate_vision(vision, embeddings.dim(0), w.config.hidden_size));
  if (!vision.empty()) scatter_rows(embeddings, vision.rows, vision.features, /*replace=*/true);
  return run_decoder(w, embeddings, positions, observer, &vision);
}

Expected<Tensor> encode_text(const TextWeights& w, const Tensor& token_ids, const TextObserver& observer) {
  OROCHI_RETURN_IF_ERROR(validate_token_ids(w.config, token_ids));
  return encode(w, token_ids, text_positions(token_ids.numel()), observer);
}

}  // namespace orochi::qwen3vl
