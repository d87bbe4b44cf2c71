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

std::vector<WeightGroup> text_encoder_weight_groups(const ModelConfigs& m) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t H = t.hidden_size, I = t.intermediate_size;
  const uint64_t layer = 2 * buffer(H, 2) + 2 * buffer(t.head_dim, 2) +   // norms, q/k norms
                         buffer(t.q_dim() * H, 2) + 2 * buffer(t.kv_dim() * H, 2) +
                         buffer(H * t.q_dim(), 2) +                      // o
                         2 * buffer(I * H, 2) + buffer(H * I, 2);        // gate, up, down
  std::vector<WeightGroup> groups;
  for (int64_t i = 0; i < m.text_layers; ++i) groups.push_back({"layer " + std::to_string(i), layer, true});
  groups.push_back({"embedding", static_cast<uint64_t>(t.vocab_size * H) * 2, false, Tier::kStreamedOnce, -1});
  return groups;
}

std::vector<BufferBytes> text_encoder_buffers(const ModelConfigs& m, int64_t L /* prompt tokens */) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t H = t.hidden_size, q = t.q_dim(), kv = t.kv_dim(), I = t.intermediate_size;
  const PoolKind act = PoolKind::kActivations, state = PoolKind::kRequestState;
  return {
      {state, "token rows in + features out f32 [L, H]", 2 * buffer(L * H, 4)},
      {state, "RoPE cos/sin f32 [L, head_dim]", 2 * buffer(L * t.head_dim, 4)},
      {act, "residual f32 + normed bf16 [L, H]", buffer(L * H, 4) + buffer(L * H, 2)},
      {act, "q, attention out bf16 [L, q]; k, v [L, kv]", 2 * buffer(L * q, 2) + 2 * buffer(L * kv, 2)},
      {act, "o / down out bf16 [L, H]", buffer(L * H, 2)},
      {act, "MLP gate, up, act bf16 [L, I]", 3 * buffer(L * I, 2)},
      {PoolKind::kScratch, "attention workspace (estimate)", buffer(t.num_attention_heads * L * 2, 4)},
      {PoolKind::kScratch, "cuBLASLt workspace", 32 * kMiB},
  };
}

}  // namespace orochi::planner
