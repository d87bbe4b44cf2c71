#include "models/h3/cuda/gpu_weights.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/quantize.h"
#include "backends/cuda/random_fill.h"
#include "models/h3/parameters.h"

namespace orochi::h3::gpu {
namespace {

bool is_adaln(const std::string& name) { return param_group_of(name) == ParamGroup::kAdaln; }

// Whether this run holds the parameter quantized: the model's one list (is_quantized_linear) at a
// precision other than bf16.
bool held_quantized(const std::string& name, Precision precision) {
  return precision != Precision::kBf16 && is_quantized_linear(name);
}

size_t arena_aligned(size_t bytes) {
  return (bytes + cuda::DeviceArena::kAlignment - 1) / cuda::DeviceArena::kAlignment * cuda::DeviceArena::kAlignment;
}

// Bytes one parameter of local shape `local` takes in an arena: bf16 (f32 islands f32), or codes
// (1 byte each) + per-row f32 scales, two allocations in that order (allocate_quantized).
size_t parameter_bytes(const std::string& name, const Shape& local, Precision precision) {
  const auto n = static_cast<size_t>(shape_numel(local));
  if (held_quantized(name, precision)) return arena_aligned(n) + arena_aligned(static_cast<size_t>(local[0]) * 4);
  return arena_aligned(n * (is_f32_island(name) ? 4 : 2));
}

Expected<RowQuantized> allocate_quantized(cuda::DeviceArena& arena, const Shape& local, Precision precision) {
  RowQuantized q;
  OROCHI_ASSIGN_OR_RETURN(q.codes, arena.tensor(local, precision_weight_dtype(precision)));  // [out, in]
  OROCHI_ASSIGN_OR_RETURN(q.scales, arena.tensor({local[0]}, DType::kF32));                  // [out]
  return q;
}

// The parameters made so far by diffusers name: plain tensors, and the quantized linears' weights.
struct MadeParameters {
  std::map<std::string, Tensor> t;
  std::map<std::string, RowQuantized> q;
  const Tensor& at(const std::string& name) const { return t.at(name); }
};

GpuLinear linear_from(const MadeParameters& t, const std::string& p, bool bias) {
  GpuLinear l;
  if (auto it = t.q.find(p + ".weight"); it != t.q.end())
    l.quantized = it->second;
  else
    l.weight = t.at(p + ".weight");
  if (bias) l.bias = t.at(p + ".bias");
  return l;
}

GpuBlock block_from(const MadeParameters& t, const std::string& p) {
  GpuBlock b;
  b.norm1 = t.at(p + "norm1.weight");
  b.norm2 = t.at(p + "norm2.weight");
  b.norm_q = t.at(p + "attn.norm_q.weight");
  b.norm_k = t.at(p + "attn.norm_k.weight");
  b.to_q = linear_from(t, p + "attn.to_q", false);
  b.to_k = linear_from(t, p + "attn.to_k", false);
  b.to_v = linear_from(t, p + "attn.to_v", false);
  b.to_out = linear_from(t, p + "attn.to_out.0", false);
  b.ff_in = linear_from(t, p + "ff.net.0.proj", false);
  b.ff_out = linear_from(t, p + "ff.net.2", false);
  return b;
}

// The transformer block a parameter belongs to, or -1.
int64_t block_of(const std::string& name) {
  static const std::string prefix = "transformer_blocks.";
  if (name.rfind(prefix, 0) != 0) return -1;
  return std::stoll(name.substr(prefix.size()));
}

// Builds GpuWeights by asking `make` for each resident parameter (diffusers name, whole shape,
// dtype, the TP rank's slice of it, the arena to put it in). A streamed block's parameters go to
// the staging slot, which is handed to `streamed->store` once the block is complete.
// A parameter the run quantizes is made in bf16 into a scratch arena, then quantized per output
// channel into its place (codes + scales). FP8 checkpoints (weights/scaled_fp8) arrive here already
// dequantized to bf16 and are requantized per channel; feeding their codes in directly (when their
// scales are per channel) is a later step.
using MakeParameter = std::function<Expected<Tensor>(const ParamSpec&, DType, const TpSlice&, cuda::DeviceArena&)>;
Expected<GpuWeights> assemble(const H3Config& c, const TpShare& share, cuda::DeviceArena& arena, const MakeParameter& make,
                              const StreamedBlocks* streamed, Precision precision, cudaStream_t cuda_stream) {
  MadeParameters t;
  std::shared_ptr<cuda::DeviceArena> bf16_scratch;  // one quantized linear's bf16 values at a time
  if (precision != Precision::kBf16) {
    size_t largest = 0;
    for (const ParamSpec& spec : h3_parameters(c))
      if (held_quantized(spec.name, precision))
        largest = std::max(largest, static_cast<size_t>(shape_numel(tp_local_shape(spec.shape, tp_slice_of(spec.name, c, share)))) * 2);
    OROCHI_ASSIGN_OR_RETURN(bf16_scratch, cuda::DeviceArena::create(arena.device().index,
                                                                    largest + cuda::DeviceArena::kAlignment,
                                                                    "H3 weight quantization scratch"));
  }
  int64_t in_slot = -1;  // the streamed block being built in the staging slot
  auto flush = [&]() -> Status {
    if (in_slot < 0) return Status::ok();
    OROCHI_RETURN_IF_ERROR(streamed->store(in_slot, streamed->staging->base(), streamed->staging->used()));
    streamed->staging->reset(0);
    in_slot = -1;
    return Status::ok();
  };
  for (const ParamSpec& spec : h3_parameters(c)) {
    if (is_adaln(spec.name)) continue;
    const int64_t block = block_of(spec.name);
    const bool stream = streamed && block >= 0 && streamed->streamed.at(block);
    if (block != in_slot) OROCHI_RETURN_IF_ERROR(flush());
    if (stream) in_slot = block;
    cuda::DeviceArena& into = stream ? *streamed->staging : arena;
    const TpSlice slice = tp_slice_of(spec.name, c, share);
    if (held_quantized(spec.name, precision)) {
      OROCHI_ASSIGN_OR_RETURN(RowQuantized q, allocate_quantized(into, tp_local_shape(spec.shape, slice), precision));
      OROCHI_ASSIGN_OR_RETURN(const Tensor values, make(spec, DType::kBF16, slice, *bf16_scratch));  // [out, in]
      OROCHI_RETURN_IF_ERROR(cuda::quantize_rows(values, q, cuda_stream));
      // The scratch takes the next linear's values: let this quantization read them first.
      OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaStreamSynchronize(cuda_stream), "quantizing a weight"));
      bf16_scratch->reset(0);
      if (!stream) t.q.emplace(spec.name, std::move(q));
      continue;
    }
    OROCHI_ASSIGN_OR_RETURN(Tensor d, make(spec, is_f32_island(spec.name) ? DType::kF32 : DType::kBF16, slice, into));
    if (!stream) t.t.emplace(spec.name, std::move(d));
  }
  OROCHI_RETURN_IF_ERROR(flush());
  GpuWeights w;
  w.config = c;
  w.proj_in = linear_from(t, "proj_in", true);
  w.audio_proj_in = linear_from(t, "audio_proj_in", true);
  w.context_embedder = linear_from(t, "context_embedder", true);
  if (c.adaln_curve_points > 0) {
    w.adaln_t_table = t.at("adaln_t_table");
  } else {
    w.time_linear_1 = linear_from(t, "time_embedder.linear_1", true);
    w.time_linear_2 = linear_from(t, "time_embedder.linear_2", true);
  }
  for (int64_t i = 0; i < c.num_refiner_layers; ++i)
    w.refiner.push_back(block_from(t, "token_refiner.refiner_blocks." + std::to_string(i) + "."));
  w.refiner_final_norm = t.at("token_refiner.final_norm.weight");
  for (int64_t i = 0; i < c.num_layers; ++i)
    w.blocks.push_back(streamed && streamed->streamed.at(i) ? GpuBlock{}
                                                            : block_from(t, "transformer_blocks." + std::to_string(i) + "."));
  w.norm_out = t.at("norm_out.norm.weight");
  w.proj_out = linear_from(t, "proj_out", true);
  w.audio_proj_out = linear_from(t, "audio_proj_out", true);
  return w;
}

// Each parameter draws from its own RNG stream (its index in the parameter list), so a weight does
// not depend on which others are generated.
struct RandomInit {
  float mean, stddev;
};
RandomInit random_init(const std::string& name) {
  if (param_group_of(name) == ParamGroup::kNorm) return {1.0f, 0.1f};
  return {0.0f, name.ends_with(".bias") ? 0.05f : 0.2f};
}
// Real-size weights need a smaller scale to keep activations finite through 50 blocks.
float fan_in_scale(const ParamSpec& spec) {
  return spec.shape.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(spec.shape[1]) / 16.0f) : 1.0f;
}

// Copies a TP rank's slice of a whole device tensor [out, in] into `local` (device to device).
Status copy_tp_slice(const Tensor& whole, const Tensor& local, const TpSlice& s, cudaStream_t stream) {
  const size_t elt = dtype_size(whole.dtype());
  const char* src = static_cast<const char*>(whole.raw_data());
  char* dst = static_cast<char*>(local.raw_data());
  const size_t in = whole.ndim() == 2 ? static_cast<size_t>(whole.dim(1)) : 1, rows = s.range.size();
  cudaError_t err = cudaSuccess;
  switch (s.kind) {
    case TpSlice::Kind::kReplicated:
      err = cudaMemcpyAsync(dst, src, whole.nbytes(), cudaMemcpyDeviceToDevice, stream);
      break;
    case TpSlice::Kind::kOutRows:
      err = cudaMemcpyAsync(dst, src + s.range.begin * in * elt, rows * in * elt, cudaMemcpyDeviceToDevice, stream);
      break;
    case TpSlice::Kind::kOutRowsBothHalves:
      err = cudaMemcpyAsync(dst, src + s.range.begin * in * elt, rows * in * elt, cudaMemcpyDeviceToDevice, stream);
      if (err == cudaSuccess)
        err = cudaMemcpyAsync(dst + rows * in * elt, src + (s.half + s.range.begin) * in * elt, rows * in * elt,
                              cudaMemcpyDeviceToDevice, stream);
      break;
    case TpSlice::Kind::kInColumns:
      err = cudaMemcpy2DAsync(dst, rows * elt, src + s.range.begin * elt, in * elt, rows * elt,
                              static_cast<size_t>(whole.dim(0)), cudaMemcpyDeviceToDevice, stream);
      break;
  }
  return cuda::cuda_status(err, "copying a tensor-parallel weight slice");
}

}  // namespace

size_t resident_weight_bytes(const H3Config& c, const TpShare& share, const std::vector<bool>& streamed,
                             Precision precision) {
  size_t bytes = 0;
  for (const ParamSpec& spec : h3_parameters(c)) {
    const int64_t block = block_of(spec.name);
    if (is_adaln(spec.name) || (block >= 0 && !streamed.empty() && streamed.at(block))) continue;
    bytes += parameter_bytes(spec.name, tp_local_shape(spec.shape, tp_slice_of(spec.name, c, share)), precision);
  }
  return bytes;
}

size_t block_image_bytes(const H3Config& c, const TpShare& share, Precision precision) {
  size_t bytes = 0;
  for (const ParamSpec& spec : h3_parameters(c))
    if (block_of(spec.name) == 0 && !is_adaln(spec.name))
      bytes += parameter_bytes(spec.name, tp_local_shape(spec.shape, tp_slice_of(spec.name, c, share)), precision);
  return bytes;
}

Expected<GpuBlock> allocate_block(const H3Config& c, const TpShare& share, cuda::DeviceArena& arena, Precision precision) {
  MadeParameters t;
  for (const ParamSpec& spec : h3_parameters(c)) {
    if (block_of(spec.name) != 0 || is_adaln(spec.name)) continue;
    const Shape local = tp_local_shape(spec.shape, tp_slice_of(spec.name, c, share));
    if (held_quantized(spec.name, precision)) {
      OROCHI_ASSIGN_OR_RETURN(RowQuantized q, allocate_quantized(arena, local, precision));
      t.q.emplace(spec.name, std::move(q));
      continue;
    }
    OROCHI_ASSIGN_OR_RETURN(Tensor d, arena.tensor(local, DType::kBF16));
    t.t.emplace(spec.name, std::move(d));
  }
  return block_from(t, "transformer_blocks.0.");
}

Expected<GpuWeights> random_gpu_weights(const H3Config& c, cuda::DeviceArena& arena, uint64_t seed, cudaStream_t stream,
                                        const TpShare& share, const StreamedBlocks* streamed, Precision precision) {
  std::map<std::string, uint64_t> stream_of;
  uint64_t index = 0;
  size_t largest_split = 0;
  for (const ParamSpec& spec : h3_parameters(c)) {
    stream_of[spec.name] = index++;
    if (tp_slice_of(spec.name, c, share).kind != TpSlice::Kind::kReplicated)
      largest_split = std::max(largest_split, static_cast<size_t>(shape_numel(spec.shape)) * 2);
  }
  // A split tensor is drawn whole into scratch (freed after loading), then its slice is kept.
  std::shared_ptr<cuda::DeviceArena> scratch;
  if (largest_split > 0) {
    const int device = arena.device().index;
    OROCHI_ASSIGN_OR_RETURN(scratch, cuda::DeviceArena::create(device, largest_split + cuda::DeviceArena::kAlignment,
                                                               "H3 weight slicing scratch"));
  }
  auto make = [&](const ParamSpec& spec, DType dtype, const TpSlice& slice, cuda::DeviceArena& into) -> Expected<Tensor> {
    OROCHI_ASSIGN_OR_RETURN(Tensor d, into.tensor(tp_local_shape(spec.shape, slice), dtype));
    const RandomInit init = random_init(spec.name);
    const float scale = init.mean == 0.0f && !spec.name.ends_with(".bias") ? fan_in_scale(spec) : 1.0f;
    const uint64_t id = stream_of.at(spec.name);
    if (slice.kind == TpSlice::Kind::kReplicated) {
      OROCHI_RETURN_IF_ERROR(cuda::fill_normal(d, seed, id, init.mean, init.stddev * scale, stream));
      return d;
    }
    const size_t mark = scratch->mark();
    OROCHI_ASSIGN_OR_RETURN(Tensor whole, scratch->tensor(spec.shape, dtype));
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(whole, seed, id, init.mean, init.stddev * scale, stream));
    OROCHI_RETURN_IF_ERROR(copy_tp_slice(whole, d, slice, stream));
    // The scratch is reused by the next tensor: let this copy finish first.
    OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaStreamSynchronize(stream), "slicing a weight"));
    scratch->reset(mark);
    return d;
  };
  return assemble(c, share, arena, make, streamed, precision, stream);
}

AdalnSource random_adaln_source(const H3Config& c, uint64_t seed, cudaStream_t stream) {
  std::map<std::string, uint64_t> stream_of;
  uint64_t index = 0;
  for (const ParamSpec& spec : h3_parameters(c)) stream_of[spec.name] = index++;
  return [c, seed, stream, stream_of](int64_t block, const Tensor& weight, const Tensor& bias) -> Status {
    const std::string p = block < 0 ? "norm_out.linear" : "transformer_blocks." + std::to_string(block) + ".adaln_proj.linear";
    const ParamSpec spec{p + ".weight", weight.shape()};
    OROCHI_RETURN_IF_ERROR(cuda::fill_normal(weight, seed, stream_of.at(p + ".weight"), 0.0f, 0.2f * fan_in_scale(spec), stream));
    return cuda::fill_normal(bias, seed, stream_of.at(p + ".bias"), 0.0f, 0.05f, stream);
  };
}

Expected<GpuWeights> upload_gpu_weights(const H3Weights& host, cuda::DeviceArena& arena, cudaStream_t stream,
                                        const TpShare& share, const StreamedBlocks* streamed, Precision precision) {
  // Index the host tensors by name once, through the same assembler the loader uses.
  std::map<std::string, Tensor> by_name;
  auto record = [&](const std::string& p, const LinearWeights& l) {
    by_name[p + ".weight"] = l.weight;
    if (l.bias.defined()) by_name[p + ".bias"] = l.bias;
  };
  auto record_block = [&](const std::string& p, const BlockWeights& b) {
    by_name[p + "norm1.weight"] = b.norm1;
    by_name[p + "norm2.weight"] = b.norm2;
    by_name[p + "attn.norm_q.weight"] = b.attn.norm_q;
    by_name[p + "attn.norm_k.weight"] = b.attn.norm_k;
    record(p + "attn.to_q", b.attn.to_q);
    record(p + "attn.to_k", b.attn.to_k);
    record(p + "attn.to_v", b.attn.to_v);
    record(p + "attn.to_out.0", b.attn.to_out);
    record(p + "ff.net.0.proj", b.ff_in);
    record(p + "ff.net.2", b.ff_out);
  };
  record("proj_in", host.proj_in);
  record("audio_proj_in", host.audio_proj_in);
  record("context_embedder", host.context_embedder);
  record("time_embedder.linear_1", host.time_linear_1);
  record("time_embedder.linear_2", host.time_linear_2);
  if (host.adaln_t_table.defined()) by_name["adaln_t_table"] = host.adaln_t_table;
  for (size_t i = 0; i < host.refiner.size(); ++i)
    record_block("token_refiner.refiner_blocks." + std::to_string(i) + ".", host.refiner[i]);
  by_name["token_refiner.final_norm.weight"] = host.refiner_final_norm;
  for (size_t i = 0; i < host.blocks.size(); ++i)
    record_block("transformer_blocks." + std::to_string(i) + ".", host.blocks[i]);
  by_name["norm_out.norm.weight"] = host.norm_out;
  record("proj_out", host.proj_out);
  record("audio_proj_out", host.audio_proj_out);
  auto make = [&](const ParamSpec& spec, DType dtype, const TpSlice& slice, cuda::DeviceArena& into) -> Expected<Tensor> {
    return cuda::upload(tp_slice_host(by_name.at(spec.name), slice), into, dtype, stream);
  };
  return assemble(host.config, share, arena, make, streamed, precision, stream);
}

AdalnSource host_adaln_source(const H3Weights& host, cudaStream_t stream) {
  return [&host, stream](int64_t block, const Tensor& weight, const Tensor& bias) -> Status {
    const LinearWeights& l = block < 0 ? host.norm_out_linear : host.blocks.at(block).adaln;
    OROCHI_RETURN_IF_ERROR(cuda::upload_into(l.weight, weight, stream));
    return cuda::upload_into(l.bias, bias, stream);
  };
}

}  // namespace orochi::h3::gpu
