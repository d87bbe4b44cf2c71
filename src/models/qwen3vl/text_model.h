// The Qwen3-VL text decoder forward (CPU reference, fp32) for one sequence of L tokens, up to the
// layer the weights were loaded for: embeddings -> decoder layers (pre-norm; causal GQA attention
// with per-head q/k RMSNorm and interleaved M-RoPE; SwiGLU MLP) -> the residual stream, with no final
// norm. This is what transformers' `model.model(..., attention_mask=ones, output_hidden_states=True)
// .hidden_states[k]` returns for k = weights.stop_after_layers() < num_hidden_layers, and what
// MiniMax-H3 conditions on (k = 50).
//
// A mixed sequence (fl2va / ref2va presentations) also carries the vision tower's outputs: its
// features replace the embeddings of the image and video pad rows, and DeepStack feature k is added
// at those rows to the output of decoder layer k (Qwen3VLModel.forward, _deepstack_process). The
// positions then come from rope_index.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/multimodal_tokens.h"
#include "models/qwen3vl/text_weights.h"

namespace orochi::qwen3vl {

// The vision rows of a mixed sequence and what the vision tower gives them.
struct VisionEmbeddings {
  std::vector<int64_t> rows;      // [V] the sequence rows of the image and video pad tokens, ascending
  Tensor features;                // f32 [V, hidden]: replace those rows' token embeddings
  std::vector<Tensor> deepstack;  // k-th f32 [V, hidden]: added at those rows after decoder layer k
  bool empty() const { return rows.empty(); }
};

// The vision tower's per-modality outputs put in sequence order, as Qwen3VLModel.forward does: the
// image features fill the image pad rows in order, the video features the video pad rows, and the
// DeepStack features of both are merged by row. `types` is the sequence's token types; a modality
// without pad tokens takes an undefined features tensor and no DeepStack. Errors: shape_mismatch
// (a features tensor whose rows are not the modality's pad count, or not [N, hidden] f32),
// invalid_argument (images and videos with different DeepStack depths).
Expected<VisionEmbeddings> vision_embeddings(const std::vector<MmTokenType>& types, int64_t hidden,
                                             const Tensor& image_features,
                                             const std::vector<Tensor>& image_deepstack,
                                             const Tensor& video_features,
                                             const std::vector<Tensor>& video_deepstack);
// Checks `vision` against a sequence of `num_tokens` tokens and the model's width.
Status validate_vision(const VisionEmbeddings& vision, int64_t num_tokens, int64_t hidden);

// Sees every named intermediate, for debugging and golden tests (a view valid during the call only:
// clone what you keep). Names follow transformers' hidden_states tuple:
//   "rope.cos", "rope.sin"  f32 [L, head_dim]
//   "hidden_states.0"       f32 [L, hidden]  the token embeddings
//   "hidden_states.{i+1}"   f32 [L, hidden]  the output of decoder layer i
using TextObserver = std::function<void(const std::string& name, const Tensor& value)>;

// Token ids must be i64 [L], L >= 1, each in [0, vocab_size). invalid_argument names the first bad
// id and its position; shape_mismatch for the wrong dtype or rank.
Status validate_token_ids(const TextConfig& config, const Tensor& token_ids);
// Positions must be i64 [L, 3] (t, h, w).
Status validate_positions(const Tensor& positions, int64_t num_tokens);

// Text-only positions: 0..L-1 on all three axes (i64 [L, 3]).
Tensor text_positions(int64_t num_tokens);

// The token embeddings, f32 [L, hidden]. Validates the ids.
Expected<Tensor> embed_tokens(const TextWeights& weights, const Tensor& token_ids);

// Runs every loaded layer over `hidden` (f32 [L, hidden], e.g. embeddings with vision rows spliced
// in) at `positions` (i64 [L, 3], as transformers' get_rope_index lays them out) and returns the
// residual stream after the last one, f32 [L, hidden]. With `vision`, DeepStack feature k is added
// at its rows after layer k when a layer follows: transformers records hidden_states[k + 1] before
// that add, and the returned stream is hidden_states[stop_after_layers].
Expected<Tensor> run_decoder(const TextWeights& weights, const Tensor& hidden, const Tensor& positions,
                             const TextObserver& observer = nullptr, const VisionEmbeddings* vision = nullptr);

// Text-only prompt: token ids i64 [L] -> hidden state after layer stop_after_layers, f32 [L, hidden].
Expected<Tensor> encode_text(const TextWeights& weights, const Tensor& token_ids,
                             const TextObserver& observer = nullptr);
// The same with explicit M-RoPE positions i64 [L, 3].
Expected<Tensor> encode(const TextWeights& weights, const Tensor& token_ids, const Tensor& positions,
                        const TextObserver& observer = nullptr);
// A mixed sequence: token ids i64 [L], positions i64 [L, 3] (rope_index), the vision rows' features.
Expected<Tensor> encode_mixed(const TextWeights& weights, const Tensor& token_ids, const Tensor& positions,
                              const VisionEmbeddings& vision, const TextObserver& observer = nullptr);

}  // namespace orochi::qwen3vl
