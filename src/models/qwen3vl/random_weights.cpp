#include "models/qwen3vl/random_weights.h"

#include <cmath>

#include "core/random.h"

namespace orochi::qwen3vl {

Tensor random_normal_tensor(const Shape& shape, uint64_t seed, uint64_t stream, float mean, float stddev) {
  Tensor t = normal_tensor(shape, seed, stream);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::fma(stddev, p[i], mean);
  return t;
}

std::vector<RandomTensorInit> vision_random_plan(const VisionConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, W = c.merged_width(), O = c.out_hidden_size;
  std::vector<RandomTensorInit> plan;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    plan.push_back({name + ".weight", {out, in}, 0.0f, 1.0f / std::sqrt(static_cast<float>(in))});
    plan.push_back({name + ".bias", {out}, 0.0f, 0.02f});
  };
  auto norm = [&](const std::string& name, int64_t n) {
    plan.push_back({name + ".weight", {n}, 1.0f, 0.05f});
    plan.push_back({name + ".bias", {n}, 0.0f, 0.02f});
  };
  auto merger = [&](const std::string& name, bool after_shuffle) {
    norm(name + ".norm", after_shuffle ? W : H);
    linear(name + ".linear_fc1", W, W);
    linear(name + ".linear_fc2", O, W);
  };
  linear("patch_embed.proj", H, c.patch_values());
  plan.push_back({"pos_embed.weight", {c.num_position_embeddings, H}, 0.0f, 0.5f});
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string b = "blocks." + std::to_string(i);
    norm(b + ".norm1", H);
    linear(b + ".attn.qkv", 3 * H, H);
    linear(b + ".attn.proj", H, H);
    norm(b + ".norm2", H);
    linear(b + ".mlp.linear_fc1", I, H);
    linear(b + ".mlp.linear_fc2", H, I);
  }
  merger("merger", false);
  for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k)
    merger("deepstack_merger_list." + std::to_string(k), true);
  return plan;
}

VisionWeights random_vision_weights(const VisionConfig& config, uint64_t seed) {
  const std::vector<RandomTensorInit> plan = vision_random_plan(config);
  size_t j = 0;
  auto next = [&]() {
    const RandomTensorInit& p = plan[j];
    Tensor t = random_normal_tensor(p.shape, seed, kVisionRandomStreamBase + j, p.mean, p.stddev);
    ++j;
    return t;
  };
  auto linear = [&]() {
    VisionLinear l;
    l.weight = next();
    l.bias = next();
    return l;
  };
  auto norm = [&]() {
    VisionNorm n;
    n.weight = next();
    n.bias = next();
    return n;
  };
  auto merger = [&](bool after_shuffle) {
    VisionMergerWeights m;
    m.norm = norm();
    m.fc1 = linear();
    m.fc2 = linear();
    m.norm_after_shuffle = after_shuffle;
    return m;
  };
  VisionWeights w;
  w.config = config;
  w.patch_embed = linear();
  w.pos_embed = next();
  for (int64_t i = 0; i < config.depth; ++i) {
    VisionBlockWeights b;
    b.norm1 = norm();
    b.qkv = linear();
    b.proj = linear();
    b.norm2 = norm();
    b.fc1 = linear();
    b.fc2 = linear();
    w.blocks.push_back(std::move(b));
  }
  w.merger = merger(false);
  for (size_t k = 0; k < config.deepstack_visual_indexes.size(); ++k) w.deepstack_mergers.push_back(merger(true));
  return w;
}

TextWeights random_text_weights(const TextConfig& c, int64_t layers, uint64_t seed) {
  TextWeights w;
  w.config = c;
  uint64_t stream = 0;
  w.embed_tokens = random_normal_tensor({c.vocab_size, c.hidden_size}, seed, stream++, 0.0f, 1.0f);
  const int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  auto matrix = [&](int64_t out, int64_t in) {
    return random_normal_tensor({out, in}, seed, stream++, 0.0f, 0.5f / std::sqrt(static_cast<float>(in)));
  };
  for (int64_t i = 0; i < layers; ++i) {
    TextLayerWeights l;
    l.input_layernorm = random_normal_tensor({H}, seed, stream++, 1.0f, 0.05f);
    l.post_attention_layernorm = random_normal_tensor({H}, seed, stream++, 1.0f, 0.05f);
    l.q_norm = random_normal_tensor({D}, seed, stream++, 1.0f, 0.05f);
    l.k_norm = random_normal_tensor({D}, seed, stream++, 1.0f, 0.05f);
    l.q_proj = matrix(c.q_dim(), H);
    l.k_proj = matrix(c.kv_dim(), H);
    l.v_proj = matrix(c.kv_dim(), H);
    l.o_proj = matrix(H, c.q_dim());
    const Tensor up_gate = matrix(2 * I, H);  // rows [up; gate]
    l.up_proj = up_gate.slice(0, 0, I).contiguous();
    l.gate_proj = up_gate.slice(0, I, 2 * I).contiguous();
    l.down_proj = matrix(H, I);
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace orochi::qwen3vl
