// The two key namings of a video VAE checkpoint (MODELS_H3.md §7), told apart by their keys:
//   diffusers  decoder.proj_in, attn.to_q / to_k / to_v, attn.to_out.0, ff.net.0.proj rows [value; gate],
//              encoder.down_blocks.i.resnets.j (conv_shortcut), down_blocks.i.downsamplers.0;
//   original   (the release's video_vae/source, and ComfyUI's models/vae file): decoder.x_embedder, one
//              fused attn.to_qkv per block, per-head interleaved [h: q, k, v] with its bias, attn.to_out,
//              ff.w1 rows [gate; up], ff.w2, encoder.down.i.block.j (nin_shortcut), down.i.downsample;
//              decoder.mask_token (unused), and in ComfyUI's file the latents_mean / latents_std.
// Everything else (register_tokens [1, R, D], scale1/2, norms, quant_conv, post_quant_conv) has one
// name in both. The loaders ask for diffusers names; original_parameter reads them from an
// original-named checkpoint.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/config.h"
#include "models/h3_video_vae/parameters.h"
#include "weights/checkpoint.h"

namespace orochi::h3vae {

enum class VaeNaming { kDiffusers, kOriginal };
const char* vae_naming_name(VaeNaming naming);  // "diffusers", "original (ComfyUI)"

// From the decoder's input projection or the encoder's first level, whichever the file has;
// invalid_argument naming the file and its first keys when neither naming's keys are there.
Expected<VaeNaming> detect_vae_naming(const weights::Checkpoint& checkpoint);

// The original key a diffusers parameter is read from (a q/k/v parameter: its block's to_qkv).
std::string original_key(const std::string& diffusers_name);
// Keys a file may hold that no parameter reads: the latents' statistics (take_file_latents reads
// them) and, in the original naming, decoder.mask_token (unused at inference).
bool is_extra_key(const std::string& name, VaeNaming naming);

// `spec` (diffusers name and shape) from an original-named checkpoint as f32: q/k/v rows taken per
// head from the fused to_qkv, ff.net.0.proj with w1's halves swapped; shapes checked by key.
Expected<Tensor> original_parameter(const weights::Checkpoint& checkpoint, const VideoVaeConfig& config,
                                    const ParamSpec& spec);

// The original key set a set of diffusers parameters reads (each fused to_qkv once).
std::vector<std::string> original_keys(const std::vector<ParamSpec>& specs);

// The per-channel latent statistics of a video VAE component. ComfyUI's file stores them
// (latents_mean, latents_std, [C] each, in the file's dtype); a diffusers config.json holds them
// too. `config_has_them`: `config`'s came from a config.json. Then the file's, if any, must agree
// within fp16 rounding; else the file's are taken; with neither, invalid_argument naming `what`
// (the mean and std cannot be guessed).
Status take_file_latents(const weights::Checkpoint& checkpoint, VideoVaeConfig& config, bool config_has_them,
                         const std::string& what);

}  // namespace orochi::h3vae
