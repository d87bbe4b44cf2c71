#include "models/qwen3vl/cuda/gpu_text_layers.h"

#include <cmath>

#include "backends/cuda/random_fill.h"

namespace orochi::qwen3vl::gpu {
namespace {

// One layer's tensors in allocation order (the image layout), with their shapes.
std::vector<Shape> layer_shapes(const TextConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  return {{H}, {H}, {c.q_dim(), H}, {c.kv_dim(), H}, {c.kv_dim(), H}, {H, c.q_dim()}, {D}, {D}, {2 * I, H}, {H, I}};
}

std::vector<Tensor*> layer_tensors(GpuTextLayer& l) {
  return {&l.input_norm, &l.post_norm, &l.q, &l.k, &l.v, &l.o, &l.q_norm, &l.k_norm, &l.up_gate, &l.down};
}

size_t aligned(size_t bytes) {
  constexpr size_t a = cuda::DeviceArena::kAlignment;
  return (bytes + a - 1) / a * a;
}

}  // namespace

size_t layer_image_bytes(const TextConfig& config) {
  size_t bytes = 0;
  for (const Shape& s : layer_shapes(config)) {
    size_t n = 2;
    for (int64_t d : s) n *= static_cast<size_t>(d);
    bytes += aligned(n);
  }
  return bytes;
}

Expected<GpuTextLayer> allocate_layer(const TextConfig& config, cuda::DeviceArena& arena) {
  GpuTextLayer l;
  const std::vector<Shape> shapes = layer_shapes(config);
  const std::vector<Tensor*> tensors = layer_tensors(l);
  for (size_t i = 0; i < shapes.size(); ++i) {
    OROCHI_ASSIGN_OR_RETURN(*tensors[i], arena.tensor(shapes[i], DType::kBF16));
  }
  return l;
}

Status upload_layer(const TextLayerWeights& h, const GpuTextLayer& l, int64_t intermediate,
                    cuda::StagedUploader& uploader) {
  const std::pair<const Tensor*, const Tensor*> pairs[] = {
      {&h.input_layernorm, &l.input_norm}, {&h.post_attention_layernorm, &l.post_norm}, {&h.q_proj, &l.q},
      {&h.k_proj, &l.k}, {&h.v_proj, &l.v}, {&h.o_proj, &l.o}, {&h.q_norm, &l.q_norm}, {&h.k_norm, &l.k_norm},
      {&h.down_proj, &l.down}};
  for (const auto& [src, dst] : pairs) OROCHI_RETURN_IF_ERROR(uploader.add(*src, *dst));
  OROCHI_RETURN_IF_ERROR(uploader.add(h.up_proj, l.up_gate.slice(0, 0, intermediate)));
  return uploader.add(h.gate_proj, l.up_gate.slice(0, intermediate, 2 * intermediate));
}

Status fill_random_layer(const GpuTextLayer& l, uint64_t seed, uint64_t& stream_id, cudaStream_t stream) {
  for (const Tensor* norm : {&l.input_norm, &l.post_norm, &l.q_norm, &l.k_norm})
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(*norm, seed, stream_id++, 1.0f, 0.05f, stream));
  for (const Tensor* m : {&l.q, &l.k, &l.v, &l.o, &l.up_gate, &l.down})
    OROCHI_RETURN_IF_ERROR(
        cuda::fill_normal(*m, seed, stream_id++, 0.0f, 0.5f / std::sqrt(static_cast<float>(m->dim(1))), stream));
  return Status::ok();
}

Expected<std::vector<std::pair<std::string, Tensor>>> download_layer(const GpuTextLayer& l, const std::string& prefix,
                                                                    int64_t intermediate, cudaStream_t stream) {
  std::vector<std::pair<std::string, Tensor>> out;
  const std::pair<const char*, Tensor> named[] = {
      {"input_layernorm.weight", l.input_norm},         {"post_attention_layernorm.weight", l.post_norm},
      {"self_attn.q_proj.weight", l.q},                 {"self_attn.k_proj.weight", l.k},
      {"self_attn.v_proj.weight", l.v},                 {"self_attn.o_proj.weight", l.o},
      {"self_attn.q_norm.weight", l.q_norm},            {"self_attn.k_norm.weight", l.k_norm},
      {"mlp.up_proj.weight", l.up_gate.slice(0, 0, intermediate)},
      {"mlp.gate_proj.weight", l.up_gate.slice(0, intermediate, 2 * intermediate)},
      {"mlp.down_proj.weight", l.down}};
  for (const auto& [name, t] : named) {
    OROCHI_ASSIGN_OR_RETURN(Tensor host, cuda::download(t, stream));
    out.emplace_back(prefix + name, std::move(host));
  }
  return out;
}

}  // namespace orochi::qwen3vl::gpu
