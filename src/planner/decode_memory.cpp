#include "planner/decode_memory.h"

#include <algorithm>

#include "models/h3_audio_vae/parameters.h"
#include "models/h3_video_vae/parameters.h"

namespace orochi::planner {
namespace {

constexpr uint64_t kAlignment = 256;  // cuda::DeviceArena::kAlignment
uint64_t buffer(int64_t elements, uint64_t element_bytes) {
  return (static_cast<uint64_t>(std::max<int64_t>(elements, 0)) * element_bytes + kAlignment - 1) / kAlignment *
         kAlignment;
}

// As gpu_vae_weights.cpp: linears and register tokens f16; norms, LayerScales and the output
// LayerNorm f32.
bool video_vae_f32(const std::string& name) {
  return name.find("norm") != std::string::npos || name.ends_with("scale1") || name.ends_with("scale2");
}

}  // namespace

std::vector<WeightGroup> decode_weight_groups(const ModelConfigs& m) {
  std::vector<WeightGroup> groups;
  groups.push_back({"video VAE in/out", 0, false});
  for (int64_t i = 0; i < m.video_vae.decoder_num_layers; ++i)
    groups.push_back({"video VAE block " + std::to_string(i), 0, false});
  const std::string block_prefix = "decoder.transformer_blocks.";
  for (const h3vae::ParamSpec& spec : h3vae::decoder_parameters(m.video_vae)) {
    WeightGroup* g = &groups[0];
    if (spec.name.rfind(block_prefix, 0) == 0) {
      const size_t dot = spec.name.find('.', block_prefix.size());
      g = &groups[1 + std::stoll(spec.name.substr(block_prefix.size(), dot - block_prefix.size()))];
    }
    g->bytes += buffer(shape_numel(spec.shape), video_vae_f32(spec.name) ? 4 : 2);
  }
  // gpu_audio_weights.cpp: f32, each weight_g / weight_v pair folded into one tensor of v's size.
  uint64_t audio = kAlignment;
  for (const h3_audio::TensorSpec& spec : h3_audio::decoder_tensors(m.audio_vae))
    if (!spec.name.ends_with(".weight_g")) audio += buffer(shape_numel(spec.shape), 4);
  groups.push_back({"audio VAE", audio, false});
  return groups;
}

uint64_t video_vae_tile_bytes(const h3vae::VideoVaeConfig& c, int64_t N) {
  const int64_t S = N + c.decoder_num_register_tokens + 1, D = c.dim(), C = c.latent_channels;
  const int64_t F = c.ffn_inner(), P = c.patch_values();
  return 4 * kAlignment + 2 * buffer(N * C, 2) + buffer(S * D, 4) + 6 * buffer(S * D, 2) + buffer(S * 2 * F, 2) +
         buffer(S * F, 2) + buffer(N * P, 2) + buffer(N * P, 4) + 2 * buffer(S * c.rope_dim(), 2);
}

std::vector<BufferBytes> decode_buffers(const ModelConfigs& m, const RequestShape& shape) {
  std::vector<BufferBytes> b;
  b.push_back({PoolKind::kActivations,
               "video VAE tile (" + std::to_string(shape.vae_tile_tokens) + " latent voxels + registers)",
               video_vae_tile_bytes(m.video_vae, shape.vae_tile_tokens)});
  // The audio decoder's buffers for both channels at once (rows = 2 x A latents).
  const h3_audio::AudioVaeConfig& a = m.audio_vae;
  const int64_t rows = 2 * shape.geometry.audio_latents;
  int64_t signal = rows * a.decoder_dim, col = rows * 7 * a.latent_dim, steps = rows;
  for (int64_t i = 0; i < a.num_stages(); ++i) {
    const int64_t ch = a.stage_channels(i);
    col = std::max(col, steps * a.decoder_kernel_sizes[i] * ch);
    steps *= a.decoder_rates[i];
    signal = std::max(signal, steps * ch);
    for (int64_t k : a.resblock_kernel_sizes) col = std::max(col, steps * k * ch);
  }
  b.push_back({PoolKind::kActivations, "audio VAE (2 channels x " + std::to_string(shape.geometry.audio_latents) +
                                           " latents)",
               buffer(rows * a.latent_channels, 4) + buffer(rows * a.latent_dim, 4) + 5 * buffer(signal, 4) +
                   buffer(col, 4) + buffer(steps, 4) + kAlignment});
  b.push_back({PoolKind::kScratch, "attention workspace (estimate)",
               buffer(m.video_vae.decoder_num_attention_heads * (shape.vae_tile_tokens + 8) * 2, 4)});
  b.push_back({PoolKind::kScratch, "cuBLASLt workspaces (video, audio)", 2 * 32 * kMiB});
  return b;
}

}  // namespace orochi::planner
