// MiniMax-H3's conditioning from a prompt (MODELS_H3.md §3): the prompt verbatim (no chat template,
// no special tokens, no truncation) through the checkpoint's tokenizer, then the Qwen3-VL text stack
// up to decoder layer 50 of 64, un-normed: hidden_states[50], [L, 5120].
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline {

inline constexpr int64_t kH3TextLayer = 50;

// Token ids i64 [L] of `prompt` from `tokenizer_path` (tokenizer.json or its folder). Errors: a
// missing or malformed tokenizer (named), invalid UTF-8, an empty prompt, and a prompt longer than
// `max_tokens` (the text encoder's max_position_embeddings) with both numbers.
Expected<Tensor> tokenize_prompt(const std::string& tokenizer_path, const std::string& prompt, int64_t max_tokens);

// The text encoder's config (qwen3vl::text_encoder_component: a text_encoder/ folder or a single
// file), checked to have more than `layer` layers (the output is the residual stream after `layer`
// layers, never the normed last one), and a single file to hold at least `layer` of them (ComfyUI's
// stops after layer 50). Reads no tensor.
Status check_text_encoder(const std::string& text_encoder, int64_t layer, int64_t* max_tokens = nullptr,
                          int64_t* hidden_size = nullptr);

// On the CPU: loads the first `layer` layers of `text_encoder` and returns f32 [L, hidden].
Expected<Tensor> encode_prompt_cpu(const std::string& text_encoder, const Tensor& token_ids, int64_t layer);

}  // namespace orochi::pipeline
