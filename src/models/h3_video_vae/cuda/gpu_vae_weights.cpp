#include "models/h3_video_vae/cuda/gpu_vae_weights.h"

#include <cmath>
#include <map>
#include <string>

#include "backends/cuda/ops_vae.h"
#include "backends/cuda/random_fill.h"
#include "models/h3_video_vae/parameters.h"

namespace orochi::h3vae::gpu {
namespace {

// One resident parameter: its diffusers name (the RNG stream and error messages use it), the
// shape the decode reads it as, its device dtype, where it goes, and its host source if any.
struct Slot {
  std::string name;
  Shape shape;
  DType dtype;
  Tensor* device;
  const Tensor* host;
};

// Every parameter of `g` in one list; `h` (may be null) supplies the matching host tensors and
// must have config.decoder_num_layers blocks.
std::vector<Slot> slots_of(const VideoVaeConfig& c, GpuDecoderWeights& g, const DecoderWeights* h) {
  const int64_t D = c.dim(), C = c.latent_channels, F = c.ffn_inner(), L = c.decoder_num_layers;
  std::vector<Slot> out;
  auto add = [&](std::string name, Shape shape, DType dtype, Tensor& device, const Tensor* host) {
    out.push_back({std::move(name), std::move(shape), dtype, &device, host});
  };
  auto linear = [&](const std::string& name, int64_t in, int64_t outf, GpuLinear& device, const Linear* host) {
    add(name + ".weight", {outf, in}, DType::kF16, device.weight, host ? &host->weight : nullptr);
    add(name + ".bias", {outf}, DType::kF16, device.bias, host ? &host->bias : nullptr);
  };
  auto vector = [&](const std::string& name, Tensor& device, const Tensor* host) {
    add(name, {D}, DType::kF32, device, host);
  };
  g.config = c;
  g.blocks.resize(static_cast<size_t>(L));
  linear("post_quant_conv", C, C, g.post_quant_conv, h ? &h->post_quant_conv : nullptr);
  linear("decoder.proj_in", C, D, g.proj_in, h ? &h->proj_in : nullptr);
  add("decoder.register_tokens", {c.decoder_num_register_tokens, D}, DType::kF16, g.register_tokens,
      h ? &h->register_tokens : nullptr);
  for (int64_t i = 0; i < L; ++i) {
    const std::string p = "decoder.transformer_blocks." + std::to_string(i) + ".";
    GpuBlock& b = g.blocks[i];
    const DecoderBlockWeights* hb = h ? &h->blocks[i] : nullptr;
    vector(p + "norm1.weight", b.norm1, hb ? &hb->norm1 : nullptr);
    linear(p + "attn.to_q", D, D, b.to_q, hb ? &hb->to_q : nullptr);
    linear(p + "attn.to_k", D, D, b.to_k, hb ? &hb->to_k : nullptr);
    linear(p + "attn.to_v", D, D, b.to_v, hb ? &hb->to_v : nullptr);
    linear(p + "attn.to_out.0", D, D, b.to_out, hb ? &hb->to_out : nullptr);
    vector(p + "scale1", b.scale1, hb ? &hb->scale1 : nullptr);
    vector(p + "norm2.weight", b.norm2, hb ? &hb->norm2 : nullptr);
    linear(p + "ff.net.0.proj", D, 2 * F, b.ff_in, hb ? &hb->ff_in : nullptr);
    linear(p + "ff.net.2", F, D, b.ff_out, hb ? &hb->ff_out : nullptr);
    vector(p + "scale2", b.scale2, hb ? &hb->scale2 : nullptr);
  }
  vector("decoder.norm_out.weight", g.norm_out_weight, h ? &h->norm_out_weight : nullptr);
  vector("decoder.norm_out.bias", g.norm_out_bias, h ? &h->norm_out_bias : nullptr);
  linear("decoder.proj_out", D, c.patch_values(), g.proj_out, h ? &h->proj_out : nullptr);
  return out;
}

struct RandomInit {
  float mean, stddev;
};
RandomInit random_init(const Slot& slot) {
  if (slot.shape.size() == 2 && slot.name.ends_with(".weight"))
    return {0.0f, 0.8f / std::sqrt(static_cast<float>(slot.shape[1]))};  // matrices: unit-ish outputs
  if (slot.name.ends_with("register_tokens")) return {0.0f, 1.0f};
  if (slot.name.ends_with("scale1") || slot.name.ends_with("scale2")) return {0.1f, 0.02f};
  if (slot.name.ends_with(".weight")) return {1.0f, 0.05f};  // norm weights
  return {0.0f, 0.02f};                                       // biases
}

}  // namespace

size_t gpu_weight_bytes(const VideoVaeConfig& config) {
  GpuDecoderWeights unused;
  size_t bytes = 0;
  for (const Slot& s : slots_of(config, unused, nullptr)) {
    const size_t n = static_cast<size_t>(shape_numel(s.shape)) * dtype_size(s.dtype);
    bytes += (n + cuda::DeviceArena::kAlignment - 1) / cuda::DeviceArena::kAlignment * cuda::DeviceArena::kAlignment;
  }
  return bytes;
}

int64_t largest_parameter(const VideoVaeConfig& config) {
  GpuDecoderWeights unused;
  int64_t most = 0;
  for (const Slot& s : slots_of(config, unused, nullptr)) most = std::max(most, shape_numel(s.shape));
  return most;
}

Expected<GpuDecoderWeights> upload_gpu_weights(const DecoderWeights& host, cuda::DeviceArena& arena,
                                               cudaStream_t stream) {
  OROCHI_RETURN_IF_ERROR(host.config.validate().with_context("video VAE weights"));
  if (static_cast<int64_t>(host.blocks.size()) != host.config.decoder_num_layers)
    return shape_mismatch("video VAE weights have " + std::to_string(host.blocks.size()) +
                          " blocks, their config says " + std::to_string(host.config.decoder_num_layers));
  GpuDecoderWeights g;
  for (const Slot& s : slots_of(host.config, g, &host)) {
    const Tensor& t = *s.host;
    if (!t.defined() || t.device().kind != DeviceKind::kCPU || !dtype_is_float(t.dtype()) ||
        t.numel() != shape_numel(s.shape))
      return shape_mismatch("video VAE weight " + s.name + " must be a host float tensor of shape " +
                            shape_to_string(s.shape) + ", got " + (t.defined() ? t.describe() : "nothing") +
                            ": were the weights loaded with load_decoder_weights for this config?");
    OROCHI_ASSIGN_OR_RETURN(*s.device, cuda::upload(t.contiguous().view(s.shape), arena, s.dtype, stream));
  }
  return g;
}

Expected<GpuDecoderWeights> init_random_gpu_weights(const VideoVaeConfig& config, cuda::DeviceArena& arena,
                                                    const Tensor& scratch, uint64_t seed, cudaStream_t stream) {
  OROCHI_RETURN_IF_ERROR(config.validate().with_context("video VAE config"));
  OROCHI_CHECK(scratch.defined() && scratch.dtype() == DType::kF32 && scratch.is_contiguous() &&
                   scratch.numel() >= largest_parameter(config),
               "init_random_gpu_weights: scratch must be contiguous f32 of at least ", largest_parameter(config),
               " elements");
  // Each parameter draws from its own stream (its index among the diffusers parameters), so a
  // weight does not depend on which others exist.
  std::map<std::string, uint64_t> stream_of;
  uint64_t index = 0;
  for (const ParamSpec& spec : decoder_parameters(config)) stream_of[spec.name] = index++;
  GpuDecoderWeights g;
  for (const Slot& s : slots_of(config, g, nullptr)) {
    OROCHI_ASSIGN_OR_RETURN(*s.device, arena.tensor(s.shape, s.dtype));
    const RandomInit init = random_init(s);
    const uint64_t id = stream_of.at(s.name);
    if (s.dtype == DType::kF32) {
      OROCHI_RETURN_IF_ERROR(cuda::fill_normal(*s.device, seed, id, init.mean, init.stddev, stream));
    } else {
      const Tensor draw = scratch.view({scratch.numel()}).slice(0, 0, s.device->numel());
      OROCHI_RETURN_IF_ERROR(cuda::fill_normal(draw, seed, id, init.mean, init.stddev, stream));
      OROCHI_RETURN_IF_ERROR(cuda::cast_to_f16(draw, *s.device, stream));
    }
  }
  return g;
}

}  // namespace orochi::h3vae::gpu
