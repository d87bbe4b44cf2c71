#include "planner/text_encoder_memory.h"

#include <algorithm>

namespace orochi::planner {
namespace {

constexpr uint64_t kAlignment = 256;
uint64_t buffer(int64_t elements, uint64_t element_bytes) {
  return (static_cast<uint64_t>(std::max<int64_t>(elements, 0)) * element_bytes + kAlignment - 1) / kAlignment *
         kAlignment;
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Status check_text_encoder_layout(const ModelConfigs& m, const ParallelLayout& layout) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t n = layout.tp();  // SP splits rows, which any count does
  if (layout.kind == ParallelLayout::Kind::kNone) return Status::ok();
  if (t.num_key_value_heads % n != 0 || t.num_attention_heads % n != 0 || t.intermediate_size % n != 0)
    return invalid_argument(layout.name() + " does not divide the text encoder's " +
                            std::to_string(t.num_key_value_heads) + " key/value heads");
  return Status::ok();
}

std::vector<WeightGroup> text_encoder_weight_groups(const ModelConfigs& m, const ParallelLayout& layout) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t tp = layout.tp();
  const int64_t H = t.hidden_size, I = t.intermediate_size;
  const uint64_t layer = 2 * buffer(H, 2) + 2 * buffer(t.head_dim, 2) +   // norms, q/k norms
                         buffer(t.q_dim() * H / tp, 2) + 2 * buffer(t.kv_dim() * H / tp, 2) +
                         buffer(H * t.q_dim() / tp, 2) +                 // o
                         2 * buffer(I * H / tp, 2) + buffer(H * I / tp, 2);  // gate, up, down
  std::vector<WeightGroup> groups;
  for (int64_t i = 0; i < m.text_layers; ++i) groups.push_back({"layer " + std::to_string(i), layer, true});
  groups.push_back({"embedding", static_cast<uint64_t>(t.vocab_size * H) * 2, false, Tier::kStreamedOnce, -1});
  return groups;
}

std::vector<BufferBytes> text_encoder_buffers(const ModelConfigs& m, int64_t text_rows, const ParallelLayout& layout) {
  const qwen3vl::TextConfig& t = m.text_encoder;
  const int64_t tpn = layout.tp(), spn = layout.sp(), H = t.hidden_size;
  const bool tp = tpn > 1, sp = spn > 1;
  const int64_t L = ceil_div(text_rows, spn);
  const int64_t q = t.q_dim() / tpn, kv = t.kv_dim() / tpn;
  const int64_t I = t.intermediate_size / tpn;
  const PoolKind act = PoolKind::kActivations, state = PoolKind::kRequestState;
  std::vector<BufferBytes> b = {
      {state, "token rows in + features out f32 [L, H]", 2 * buffer(L * H, 4)},
      {state, "RoPE cos/sin f32 [L, head_dim]", 2 * buffer(L * t.head_dim, 4)},
      {act, "residual f32 + normed bf16 [L, H]", buffer(L * H, 4) + buffer(L * H, 2)},
      {act, "q, attention out bf16 [L, q]; k, v [L, kv]", 2 * buffer(L * q, 2) + 2 * buffer(L * kv, 2)},
      {act, "o / down out bf16 [L, H]", buffer(L * H, 2)},
      {act, "MLP gate, up, act bf16 [L, I]", 3 * buffer(L * I, 2)},
      {PoolKind::kScratch, "attention workspace (estimate)", buffer(t.num_attention_heads * text_rows * 2, 4)},
      {PoolKind::kScratch, "cuBLASLt workspace", 32 * kMiB},
  };
  if (tp) b.push_back({PoolKind::kComm, "all-reduce overlap buffer bf16 [L, H]", buffer(L * H, 2)});
  if (sp) b.push_back({PoolKind::kComm, "all_to_all receive q, k, v", buffer(L * q, 2) + 2 * buffer(L * kv, 2)});
  if (tp || sp) b.push_back({PoolKind::kComm, "NCCL channel buffers (estimate)", 64 * kMiB});
  return b;
}

}  // namespace orochi::planner
