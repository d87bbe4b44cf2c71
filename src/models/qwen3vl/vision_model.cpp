#include "models/qwen3vl/vision_model.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_vae.h"
#include "models/qwen3vl/vision_layout.h"
#include "models/qwen3vl/vision_ops_cpu.h"

namespace orochi::qwen3vl {
namespace {

void notify(const VisionObserver& observer, const std::string& name, const Tensor& t) {
  if (observer) observer(name, t);
}

// fp32 for the ops: an f32 view is used in place, any other dtype is converted.
Tensor f32(const Tensor& t) { return t.dtype() == DType::kF32 && t.is_contiguous() ? t : t.to(DType::kF32); }

Tensor linear(const Tensor& x, const VisionLinear& l) {
  const Tensor w = f32(l.weight), b = f32(l.bias);
  return cpu::linear(x, w, &b);
}

Tensor layer_norm(const Tensor& x, const VisionNorm& n) {
  return cpu::layer_norm(x, f32(n.weight), f32(n.bias), static_cast<float>(VisionConfig::kLayerNormEps));
}

// x [N, hidden] (already normed) -> attention branch [N, hidden], each segment attending to itself.
Tensor self_attention(const Tensor& x, const VisionBlockWeights& w, const VisionConfig& c,
                      const cpu::RopeTable& rope, const std::vector<int64_t>& segments) {
  const int64_t N = x.dim(0), H = c.num_heads, D = c.head_dim(), C = c.hidden_size;
  const SplitHeads heads = split_qkv_rope(linear(x, w.qkv), H, rope);  // [N, H, D] each
  const Tensor &q = heads.q, &k = heads.k, &v = heads.v;
  Tensor o = Tensor::uninitialized({N, H, D}, DType::kF32);  // [N, H, D]
  int64_t start = 0;
  for (int64_t len : segments) {
    const Tensor part = cpu::attention(q.slice(0, start, start + len), k.slice(0, start, start + len),
                                       v.slice(0, start, start + len));
    std::memcpy(o.data<float>() + start * C, part.data<float>(), sizeof(float) * len * C);
    start += len;
  }
  return linear(o.view({N, C}), w.proj);  // [N, hidden]
}

// In place over the residual stream h [N, hidden].
void vision_block(Tensor& h, const VisionBlockWeights& w, const VisionConfig& c, const cpu::RopeTable& rope,
                  const std::vector<int64_t>& segments) {
  cpu::add_inplace(h, self_attention(layer_norm(h, w.norm1), w, c, rope, segments));
  Tensor act = linear(layer_norm(h, w.norm2), w.fc1);  // [N, intermediate]
  gelu_inplace(act, c.hidden_act);
  cpu::add_inplace(h, linear(act, w.fc2));
}

// h [N, hidden] -> [N / 4, out]: the 2x2 patches of a token side by side, LayerNorm (per patch, or
// over the concatenation for DeepStack), fc1, erf GELU, fc2.
Tensor merge(const Tensor& h, const VisionMergerWeights& m, const VisionConfig& c) {
  const int64_t M = h.dim(0) / c.merge_unit(), W = c.merged_width();
  const Tensor normed = m.norm_after_shuffle ? layer_norm(h.view({M, W}), m.norm) : layer_norm(h, m.norm).view({M, W});
  Tensor x = linear(normed, m.fc1);  // [M, 4·hidden]
  gelu_inplace(x, VisionActivation::kGeluErf);
  return linear(x, m.fc2);  // [M, out]
}

}  // namespace

Expected<VisionFeatures> run_vision_tower(const VisionWeights& w, const Tensor& pixel_values,
                                          const std::vector<GridThw>& grids, const VisionObserver& observer) {
  const VisionConfig& c = w.config;
  OROCHI_RETURN_IF_ERROR(validate_vision_inputs(c, pixel_values, grids));
  if (static_cast<int64_t>(w.blocks.size()) != c.depth ||
      w.deepstack_mergers.size() != c.deepstack_visual_indexes.size())
    return invalid_argument("the vision weights do not match their config (" + std::to_string(w.blocks.size()) +
                            " blocks for depth " + std::to_string(c.depth) + "); load them with load_vision_weights");

  Tensor h = linear(f32(pixel_values), w.patch_embed);  // [N, hidden]
  notify(observer, "patch_embed", h);
  const Tensor pe = interpolated_positions(w.pos_embed, position_taps(c, grids));  // [N, hidden]
  notify(observer, "pos_embed", pe);
  cpu::add_inplace(h, pe);
  const cpu::RopeTable rope = vision_rope_table(c, grids);
  notify(observer, "rope.cos", rope.cos);
  notify(observer, "rope.sin", rope.sin);
  const std::vector<int64_t> segments = attention_segments(grids);

  VisionFeatures out;
  for (int64_t i = 0; i < c.depth; ++i) {
    vision_block(h, w.blocks[static_cast<size_t>(i)], c, rope, segments);
    notify(observer, "blocks." + std::to_string(i), h);
    // Outputs in block order; block i uses the merger at i's position in the list (as transformers).
    for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k)
      if (c.deepstack_visual_indexes[k] == i) {
        out.deepstack.push_back(merge(h, w.deepstack_mergers[k], c));
        notify(observer, "deepstack." + std::to_string(out.deepstack.size() - 1), out.deepstack.back());
      }
  }
  out.features = merge(h, w.merger, c);
  notify(observer, "merger", out.features);
  return out;
}

}  // namespace orochi::qwen3vl
