// Which naming an H3 transformer checkpoint uses, and how to read a diffusers-named parameter out
// of it. Two flavours load: diffusers (`proj_in`, `transformer_blocks.i.attn.to_q`, ...) and the
// original release (`video_patch_proj`, `blocks.i.attn.qkv_proj` with per-head interleaved q/k/v
// rows, `mlp.fc1` stored [gate; value]), optionally under a ComfyUI prefix such as
// `model.diffusion_model.`.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "models/h3/config.h"
#include "models/h3/parameters.h"
#include "weights/checkpoint.h"

namespace orochi::h3 {

enum class KeyFlavor { kDiffusers, kOriginal };

struct KeyLayout {
  KeyFlavor flavor = KeyFlavor::kDiffusers;
  std::string prefix;  // stripped from every key, e.g. "model.diffusion_model."
  std::string describe() const;
};

// Finds the flavour from marker keys; an error lists a few keys when neither flavour matches.
Expected<KeyLayout> detect_key_layout(const weights::Checkpoint& checkpoint);

// The key a (non-fused) diffusers parameter has in the original release naming.
std::string original_key(const std::string& diffusers_name);

// Every key the checkpoint must hold for this config (optional extras are not listed).
std::vector<std::string> expected_checkpoint_keys(const KeyLayout& layout, const H3Config& config);
// Unknown or missing keys, by name.
Status check_checkpoint_keys(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                             const H3Config& config);

// Every present parameter's stored shape and dtype against the config, from the headers alone (no
// data read): read_parameter's check and words, for `orochi inspect`. Missing keys are left to
// check_checkpoint_keys.
Status check_parameter_shapes(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                              const H3Config& config);

// Reads one parameter in diffusers layout (un-fusing q/k/v and swapping the fc1 halves for the
// original flavour): a contiguous f32 tensor, or with `as_stored` in the checkpoint's own float
// dtype (a zero-copy view of the mapped file where no un-fusing is needed). Wrong shapes are
// reported by key.
Expected<Tensor> read_parameter(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                                const ParamSpec& spec, const H3Config& config, bool as_stored = false);

}  // namespace orochi::h3
