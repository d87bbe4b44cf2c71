// Model weights written back as checkpoint tensors, for tests that load a model from files they
// make: the H3 transformer under its diffusers names, and the two VAE decoders as ComfyUI keeps them
// (the video VAE in the original release's names, the audio VAE with its weight norm folded), with
// config.json objects for each.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "models/h3/weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/weights.h"

namespace orochi::testing {

using NamedTensors = std::map<std::string, Tensor>;

// Every tensor of `w` by its diffusers name (the order assemble_weights reads them).
NamedTensors h3_named_tensors(const h3::H3Weights& w);
nlohmann::json h3_config_json(const h3::H3Config& c);

// The decoder in the original naming (fused per-head-interleaved to_qkv, ff.w1 rows [gate; up],
// x_embedder, mask_token) with latents_mean / latents_std, as ComfyUI's models/vae file holds it.
NamedTensors comfy_video_decoder_tensors(const h3vae::DecoderWeights& w);
nlohmann::json video_vae_config_json(const h3vae::VideoVaeConfig& c, bool with_latents);

// The decoder with its (already folded) weight-normed convolutions as plain `weight`s, and
// latents_mean / latents_std, as ComfyUI's models/vae file holds it.
NamedTensors comfy_audio_decoder_tensors(const h3_audio::AudioDecoderWeights& w);
nlohmann::json audio_vae_config_json(const h3_audio::AudioVaeConfig& c, bool with_latents);

// Writes `tensors` as one safetensors file (test failure on error); returns `path`.
std::string write_tensors(const std::string& path, const NamedTensors& tensors);
// Writes `json` to `path`; returns `path`.
std::string write_json(const std::string& path, const nlohmann::json& json);

}  // namespace orochi::testing
