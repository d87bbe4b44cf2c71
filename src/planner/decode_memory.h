// The decode phase's memory on one GPU: the video VAE's ViT decoder (f16 linears, f32 norms and
// LayerScales; one tile's activations at a time) and the audio VAE's BigVGAN decoder (f32). The
// tiles and the waveform come back to the host, where chunks are stitched.
#pragma once

#include <vector>

#include "planner/h3_denoiser_memory.h"

namespace orochi::planner {

// "video VAE block 0".."35" plus "video VAE in/out" and "audio VAE", all resident: the decoders
// run tile by tile (196 tiles at 768p), so streaming their weights would repeat per tile.
std::vector<WeightGroup> decode_weight_groups(const ModelConfigs& models);

// MIRRORS buffer_specs / activation_bytes in src/models/h3_video_vae/cuda/gpu_decoder.cpp (for
// shape.vae_tile_tokens) and buffer_sizes / audio_activation_bytes in
// src/models/h3_audio_vae/cuda/gpu_audio_decoder.cpp (for 2 channels x A latents).
std::vector<BufferBytes> decode_buffers(const ModelConfigs& models, const RequestShape& shape);

// Bytes of the video decoder's tile activations alone (gpu_decoder.cpp's activation_bytes).
uint64_t video_vae_tile_bytes(const h3vae::VideoVaeConfig& config, int64_t tile_tokens);

}  // namespace orochi::planner
