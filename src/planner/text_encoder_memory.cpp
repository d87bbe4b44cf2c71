#include "planner/text_encoder_memory.h"

#include <algorithm>

namespace orochi::planner {
namespace {

constexpr uint64_t kAlignment = 256;
uint64_t buffer(int64_t elements, uint64_t element_bytes) {
  return (static_cast<uint64_t>(std::max<int64_t>(elements, 0)) * element_bytes + kAlignment - 1) / kAlignment *
         kAlignment;
}

}  // namespace

int64_t vision_tower_parameters(const qwen3vl::VisionConfig& v) {
  const int64_t h = v.hidden_size, I = v.intermediate_size, m = v.merged_width(), o = v.out_hidden_size;
  const int64_t block = 2 * 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (I * h + I) + (h * I + h);
  const int64_t merger = 2 * h + (m * m + m) + (o * m + o);       // its norm is over the unmerged width
  const int64_t deepstack = 2 * m + (m * m + m) + (o * m + o);    // norm after the 2x2 shuffle
  return (h * v.patch_values() + h) + v.num_position_embeddings * h + v.depth * block + merger +
         static_cast<int64_t>(v.deepstack_visual_indexes.size()) * deepstack;
}

std::vector<WeightGroup> text_encoder_weight_groups(const ModelConfigs& m, bool vision, Precision precision) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t H = t.hidden_size, I = t.intermediate_size;
  // A linear [out, in]: bf16, or 1-byte codes and f32 scales [out] (two arena pieces).
  auto linear = [precision](int64_t out, int64_t in) {
    if (precision == Precision::kBf16) return buffer(out * in, 2);
    return buffer(out * in, dtype_size(precision_weight_dtype(precision))) + buffer(out, 4);
  };
  const uint64_t layer = 2 * buffer(H, 2) + 2 * buffer(t.head_dim, 2) +   // norms, q/k norms
                         linear(t.q_dim(), H) + 2 * linear(t.kv_dim(), H) +
                         linear(H, t.q_dim()) +                          // o
                         linear(2 * I, H) + linear(H, I);                // [up; gate], down
  std::vector<WeightGroup> groups;
  for (int64_t i = 0; i < m.text_layers; ++i) groups.push_back({"layer " + std::to_string(i), layer, true});
  groups.push_back({"embedding", static_cast<uint64_t>(t.vocab_size * H) * 2, false, Tier::kStreamedOnce, -1});
  if (vision) groups.push_back({"vision tower", static_cast<uint64_t>(vision_tower_parameters(m.vision)) * 2, false});
  return groups;
}

std::vector<BufferBytes> text_encoder_buffers(const ModelConfigs& m, int64_t L /* prompt tokens */,
                                             int64_t N /* vision patches */, Precision precision) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t H = t.hidden_size, q = t.q_dim(), kv = t.kv_dim(), I = t.intermediate_size;
  const PoolKind act = PoolKind::kActivations, state = PoolKind::kRequestState;
  std::vector<BufferBytes> b = {
      {state, "token rows in + features out f32 [L, H]", 2 * buffer(L * H, 4)},
      {state, "RoPE cos/sin f32 [L, head_dim]", 2 * buffer(L * t.head_dim, 4)},
      {act, "residual f32 + normed bf16 [L, H]", buffer(L * H, 4) + buffer(L * H, 2)},
      {act, "q, attention out bf16 [L, q]; k, v [L, kv]", 2 * buffer(L * q, 2) + 2 * buffer(L * kv, 2)},
      {act, "o / down out bf16 [L, H]", buffer(L * H, 2)},
      {act, "MLP gate, up, act bf16 [L, I]", 3 * buffer(L * I, 2)},
      {PoolKind::kScratch, "attention workspace (estimate)", buffer(t.num_attention_heads * L * 2, 4)},
      {PoolKind::kScratch, "cuBLASLt workspace", 32 * kMiB},
  };
  if (precision != Precision::kBf16) {
    // One linear input's codes and per-token scales, the quantized GEMM's accumulator, the
    // quantized runner's own cuBLASLt workspace (QuantizedGemmRunner::kDefaultWorkspaceBytes).
    const std::string codes = dtype_name(precision_weight_dtype(precision));
    b.push_back({act, "quantized linear input " + codes + " [L, " + std::to_string(t.widest_linear_in()) +
                          "] + scales f32 [L]",
                 buffer(L * t.widest_linear_in(), 1) + buffer(L, 4)});
    b.push_back({act, "quantized GEMM accumulator f32 [" +
                          std::to_string(quantized_accumulator_rows(precision, L)) + ", " +
                          std::to_string(t.widest_linear_out()) + "]",
                 buffer(quantized_accumulator_rows(precision, L) * t.widest_linear_out(), 4)});
    b.push_back({PoolKind::kScratch, "quantized cuBLASLt workspace", 32 * kMiB});
    // Loading: each linear is made in bf16 before it is quantized, one at a time in a scratch of
    // the largest ([up; gate]) beside the arenas (qwen3vl/cuda/gpu_text_layers.h).
    b.push_back({PoolKind::kScratch, "weight quantization scratch bf16 [" + std::to_string(2 * I) + ", " +
                                         std::to_string(H) + "] (while loading)",
                 buffer(2 * I * H, 2)});
  }
  if (N > 0) {
    // The tower over N patches (bf16): pixel values in, a residual and its normed copy, q/k/v and the
    // attention output, the MLP's hidden; the merged tokens and the DeepStack features stay for the
    // decoder layers that add them.
    const qwen3vl::VisionConfig& v = m.vision;
    const int64_t h = v.hidden_size, tokens = N / v.merge_unit(), o = v.out_hidden_size;
    const int64_t features = 1 + static_cast<int64_t>(v.deepstack_visual_indexes.size());
    b.push_back({state, "vision pixel values bf16 [N, " + std::to_string(v.patch_values()) + "]",
                 buffer(N * v.patch_values(), 2)});
    b.push_back({act, "vision tower residual, normed, q/k/v, attention out, MLP bf16 [N, ...] (estimate)",
                 buffer(N * h, 4) + 5 * buffer(N * h, 2) + buffer(N * v.intermediate_size, 2)});
    b.push_back({state, "vision features and DeepStack features bf16 [N/4, " + std::to_string(o) + "] x " +
                            std::to_string(features),
                 static_cast<uint64_t>(features) * buffer(tokens * o, 2)});
  }
  return b;
}

}  // namespace orochi::planner
