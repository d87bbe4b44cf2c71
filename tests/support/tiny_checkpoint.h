// A MiniMax-H3 model folder assembled from the repository's tiny test parts, for engine tests of a
// checkpoint's fl2va and ref2va (issue 23): tests/data/h3_tiny's transformer as transformer/, the
// video and audio VAEs of h3_fl2va (encoders included), the Qwen BPE test tokenizer, and
// h3_fl2va_prompt's Qwen3-VL conditioner (vision tower + 3 text layers 8 wide = h3_tiny's text_dim;
// read its features with --text-layer 2) with its processor/ folder. Parts are symlinks.
#pragma once

#include <filesystem>

namespace orochi::testing {

enum class TinyRefPartition {
  kNone,      // no transformer_ref/
  kSame,      // transformer_ref/ is transformer/ (a symlink to the same folder)
  kDistinct,  // transformer_ref/ is a bf16-rounded copy of transformer/: other weights
};

void assemble_tiny_checkpoint(const std::filesystem::path& root, TinyRefPartition ref = TinyRefPartition::kNone);

// The conditioner's hidden state the tiny checkpoint's tests read (hidden_states[2]).
inline constexpr int kTinyTextLayer = 2;

}  // namespace orochi::testing
