// Conditioning features for the denoiser's text rows: read from a safetensors file (`orochi
// generate --text-features`, e.g. saved from diffusers' `prompt_embeds`), or random for the demo.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline {

// Reads the tensor `prompt_embeds` (or the file's only tensor) of shape [L, D] or [1, L, D] in any
// float dtype, returned as f32 [L, D]. Errors name the file and say what was expected: a missing
// or corrupt file, several tensors and none called prompt_embeds, a batch above 1, D != text_dim,
// L = 0, non-finite values.
Expected<Tensor> load_text_features(const std::string& path, int64_t text_dim);

// N(0, 1) features [rows, text_dim] from the counter-based RNG (the demo model has no conditioner).
Tensor random_text_features(int64_t rows, int64_t text_dim, uint64_t seed);

}  // namespace orochi::pipeline
