#include "models/qwen3vl/cuda/gpu_text_layers.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/quantize.h"
#include "backends/cuda/random_fill.h"

namespace orochi::qwen3vl::gpu {
namespace {

size_t aligned(size_t bytes) {
  constexpr size_t a = cuda::DeviceArena::kAlignment;
  return (bytes + a - 1) / a * a;
}

// The layer's shapes; allocate_layer and layer_image_bytes walk them in the same order.
struct LayerShapes {
  Shape norm, q, kv, o, head, up_gate, down;
  explicit LayerShapes(const TextConfig& c)
      : norm{c.hidden_size}, q{c.q_dim(), c.hidden_size}, kv{c.kv_dim(), c.hidden_size}, o{c.hidden_size, c.q_dim()},
        head{c.head_dim}, up_gate{2 * c.intermediate_size, c.hidden_size}, down{c.hidden_size, c.intermediate_size} {}
};

size_t plain_bytes(const Shape& s) { return aligned(static_cast<size_t>(shape_numel(s)) * 2); }

// bf16 [out, in], or codes [out, in] (1 byte each) then scales f32 [out] (allocate_linear's order).
size_t linear_bytes(const Shape& s, Precision precision) {
  if (precision == Precision::kBf16) return plain_bytes(s);
  return aligned(static_cast<size_t>(shape_numel(s))) + aligned(static_cast<size_t>(s[0]) * 4);
}

Expected<GpuLinear> allocate_linear(const Shape& s, Precision precision, cuda::DeviceArena& arena) {
  GpuLinear l;
  if (precision == Precision::kBf16) {
    OROCHI_ASSIGN_OR_RETURN(l.weight, arena.tensor(s, DType::kBF16));  // [out, in]
    return l;
  }
  OROCHI_ASSIGN_OR_RETURN(l.quantized.codes, arena.tensor(s, precision_weight_dtype(precision)));  // [out, in]
  OROCHI_ASSIGN_OR_RETURN(l.quantized.scales, arena.tensor({s[0]}, DType::kF32));                 // [out]
  return l;
}

// Where a linear's bf16 values go first: its weight, or the scratch's first out · in elements.
Tensor bf16_target(const GpuLinear& l, const LayerFill& fill) {
  if (!l.is_quantized()) return l.weight;
  OROCHI_CHECK(fill.bf16_scratch.defined(), "a quantized Qwen3-VL linear filled without a bf16 scratch");
  const int64_t out = l.quantized.rows(), in = l.quantized.cols();
  return fill.bf16_scratch.slice(0, 0, out * in).view({out, in});
}

// After the bf16 values are in `values` (queued on fill.stream): a quantized linear's codes and
// scales from them, waited for so that the scratch can take the next linear's values.
Status finish_linear(const GpuLinear& l, const Tensor& values, const LayerFill& fill) {
  if (!l.is_quantized()) return Status::ok();
  OROCHI_RETURN_IF_ERROR(cuda::quantize_rows(values, l.quantized, fill.stream));
  return cuda::cuda_status(cudaStreamSynchronize(fill.stream), "quantizing a Qwen3-VL linear");
}

// Host parts stacked by rows (one part, or [up; gate]) into linear `l`.
Status upload_linear(std::initializer_list<const Tensor*> parts, const GpuLinear& l, cuda::StagedUploader& uploader,
                     const LayerFill& fill) {
  const Tensor target = bf16_target(l, fill);  // [out, in]
  int64_t row = 0;
  for (const Tensor* p : parts) {
    OROCHI_RETURN_IF_ERROR(uploader.add(*p, target.slice(0, row, row + p->dim(0))));
    row += p->dim(0);
  }
  if (!l.is_quantized()) return Status::ok();
  OROCHI_RETURN_IF_ERROR(uploader.finish());  // the values are on the GPU before they are quantized
  return finish_linear(l, target, fill);
}

}  // namespace

size_t layer_image_bytes(const TextConfig& config, Precision precision) {
  const LayerShapes s(config);
  return 2 * plain_bytes(s.norm) + linear_bytes(s.q, precision) + 2 * linear_bytes(s.kv, precision) +
         linear_bytes(s.o, precision) + 2 * plain_bytes(s.head) + linear_bytes(s.up_gate, precision) +
         linear_bytes(s.down, precision);
}

int64_t largest_linear_elements(const TextConfig& config) {
  const LayerShapes s(config);
  int64_t n = 0;
  for (const Shape* shape : {&s.q, &s.kv, &s.o, &s.up_gate, &s.down}) n = std::max(n, shape_numel(*shape));
  return n;
}

Expected<GpuTextLayer> allocate_layer(const TextConfig& config, cuda::DeviceArena& arena, Precision precision) {
  const LayerShapes s(config);
  GpuTextLayer l;
  OROCHI_ASSIGN_OR_RETURN(l.input_norm, arena.tensor(s.norm, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.post_norm, arena.tensor(s.norm, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.q, allocate_linear(s.q, precision, arena));
  OROCHI_ASSIGN_OR_RETURN(l.k, allocate_linear(s.kv, precision, arena));
  OROCHI_ASSIGN_OR_RETURN(l.v, allocate_linear(s.kv, precision, arena));
  OROCHI_ASSIGN_OR_RETURN(l.o, allocate_linear(s.o, precision, arena));
  OROCHI_ASSIGN_OR_RETURN(l.q_norm, arena.tensor(s.head, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.k_norm, arena.tensor(s.head, DType::kBF16));
  OROCHI_ASSIGN_OR_RETURN(l.up_gate, allocate_linear(s.up_gate, precision, arena));
  OROCHI_ASSIGN_OR_RETURN(l.down, allocate_linear(s.down, precision, arena));
  return l;
}

Status upload_layer(const TextLayerWeights& h, const GpuTextLayer& l, cuda::StagedUploader& uploader,
                    const LayerFill& fill) {
  const std::pair<const Tensor*, const Tensor*> norms[] = {{&h.input_layernorm, &l.input_norm},
                                                           {&h.post_attention_layernorm, &l.post_norm},
                                                           {&h.q_norm, &l.q_norm},
                                                           {&h.k_norm, &l.k_norm}};
  for (const auto& [src, dst] : norms) OROCHI_RETURN_IF_ERROR(uploader.add(*src, *dst));
  OROCHI_RETURN_IF_ERROR(upload_linear({&h.q_proj}, l.q, uploader, fill));
  OROCHI_RETURN_IF_ERROR(upload_linear({&h.k_proj}, l.k, uploader, fill));
  OROCHI_RETURN_IF_ERROR(upload_linear({&h.v_proj}, l.v, uploader, fill));
  OROCHI_RETURN_IF_ERROR(upload_linear({&h.o_proj}, l.o, uploader, fill));
  OROCHI_RETURN_IF_ERROR(upload_linear({&h.down_proj}, l.down, uploader, fill));
  return upload_linear({&h.up_proj, &h.gate_proj}, l.up_gate, uploader, fill);
}

Status fill_random_layer(const GpuTextLayer& l, uint64_t seed, uint64_t& stream_id, const LayerFill& fill) {
  for (const Tensor* norm : {&l.input_norm, &l.post_norm, &l.q_norm, &l.k_norm})
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(*norm, seed, stream_id++, 1.0f, 0.05f, fill.stream));
  for (const GpuLinear* m : {&l.q, &l.k, &l.v, &l.o, &l.up_gate, &l.down}) {
    const Tensor values = bf16_target(*m, fill);  // [out, in]
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(values, seed, stream_id++, 0.0f,
                                             0.5f / std::sqrt(static_cast<float>(values.dim(1))), fill.stream));
    OROCHI_RETURN_IF_ERROR(finish_linear(*m, values, fill));
  }
  return Status::ok();
}

Expected<std::vector<std::pair<std::string, Tensor>>> download_layer(const GpuTextLayer& l, const std::string& prefix,
                                                                    int64_t intermediate, cudaStream_t stream) {
  if (l.q.is_quantized())
    return unsupported("a quantized Qwen3-VL layer has no bf16 weights to write; load it at bf16 to write a checkpoint");
  std::vector<std::pair<std::string, Tensor>> out;
  const std::pair<const char*, Tensor> named[] = {
      {"input_layernorm.weight", l.input_norm},         {"post_attention_layernorm.weight", l.post_norm},
      {"self_attn.q_proj.weight", l.q.weight},          {"self_attn.k_proj.weight", l.k.weight},
      {"self_attn.v_proj.weight", l.v.weight},          {"self_attn.o_proj.weight", l.o.weight},
      {"self_attn.q_norm.weight", l.q_norm},            {"self_attn.k_norm.weight", l.k_norm},
      {"mlp.up_proj.weight", l.up_gate.weight.slice(0, 0, intermediate)},
      {"mlp.gate_proj.weight", l.up_gate.weight.slice(0, intermediate, 2 * intermediate)},
      {"mlp.down_proj.weight", l.down.weight}};
  for (const auto& [name, t] : named) {
    OROCHI_ASSIGN_OR_RETURN(Tensor host, cuda::download(t, stream));
    out.emplace_back(prefix + name, std::move(host));
  }
  return out;
}

}  // namespace orochi::qwen3vl::gpu
