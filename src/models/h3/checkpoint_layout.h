// Which naming an H3 transformer checkpoint uses, and how to read a diffusers-named parameter out
// of it. Two flavours load: diffusers (`proj_in`, `transformer_blocks.i.attn.to_q`, ...) and the
// original release (`video_patch_proj`, `blocks.i.attn.qkv_proj` with per-head interleaved q/k/v
// rows, `mlp.fc1` stored [gate; value]), optionally under a ComfyUI prefix such as
// `model.diffusion_model.`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/h3/config.h"
#include "models/h3/parameters.h"
#include "weights/checkpoint.h"

namespace orochi::h3 {

enum class KeyFlavor { kDiffusers, kOriginal };

// The row order of a fused [3·heads·head_dim, in] q/k/v (original names): per-head interleaved
// [h: q, k, v]×heads (the original release, DiffSynth) or contiguous thirds [q_all; k_all; v_all]
// (ComfyUI's model). Shapes cannot tell them apart (MODELS_H3.md §7): see detect_qkv_order.
enum class QkvOrder { kInterleaved, kThirds };
const char* qkv_order_name(QkvOrder order);  // "interleaved", "thirds"

struct KeyLayout {
  KeyFlavor flavor = KeyFlavor::kDiffusers;
  std::string prefix;  // stripped from every key, e.g. "model.diffusion_model."
  QkvOrder qkv = QkvOrder::kInterleaved;  // original flavour only; the release's order by default
  std::string describe() const;
};

// Rows of one part (0 q, 1 k, 2 v) of a fused q/k/v [3·heads·hd, cols] in `order`: a contiguous
// [heads·hd, cols] tensor of the same dtype. The one split that checkpoints and LoRAs share.
Tensor fused_qkv_part(const Tensor& fused, int part, QkvOrder order, int64_t heads, int64_t head_dim);

// [a; b] -> [b; a] by rows: the original fc1 [gate; value] and ours [value; gate], either way.
Tensor swap_row_halves(const Tensor& t);

// The fused q/k/v order of an original-named checkpoint, found numerically. Trained q, k and v
// projections differ in scale (their row norms), so the 3·heads blocks of head_dim rows of each
// layer's fused weight group by kind under the right order and mix under the wrong one. For every
// layer (refiner and main blocks) both candidate splits are scored by the F ratio of the blocks'
// log RMS between the three kinds over within a kind; a layer votes for an order when its score is
// >= 8 and >= 8x the other's. The order is taken when at least half the layers vote for it and none
// for the other; otherwise the answer is ambiguous (random weights, for one), refused naming the
// checkpoint and the votes, with the advice to pass the order (--qkv-order). One head: either.
struct QkvDetection {
  std::optional<QkvOrder> order;  // none: ambiguous
  int layers = 0, votes_interleaved = 0, votes_thirds = 0;
  std::string describe() const;
};
Expected<QkvDetection> detect_qkv_order(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                                        const H3Config& config);

// Finds the flavour from marker keys; an error lists a few keys when neither flavour matches.
Expected<KeyLayout> detect_key_layout(const weights::Checkpoint& checkpoint);

// The key a (non-fused) diffusers parameter has in the original release naming.
std::string original_key(const std::string& diffusers_name);

// Every key the checkpoint must hold for this config (optional extras are not listed).
std::vector<std::string> expected_checkpoint_keys(const KeyLayout& layout, const H3Config& config);
// Unknown or missing keys, by name. ComfyUI's FP8 companions (weights/scaled_fp8.h: the scales, the
// input scales, the `scaled_fp8` marker, comfy_quant blobs) are allowed beside their weights.
Status check_checkpoint_keys(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                             const H3Config& config);

// Every present parameter's stored shape and dtype against the config, from the headers alone (no
// data read): read_parameter's check and words, for `orochi inspect`. Missing keys are left to
// check_checkpoint_keys.
Status check_parameter_shapes(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                              const H3Config& config);

// Reads one parameter in diffusers layout (un-fusing q/k/v in layout.qkv order and swapping the fc1
// halves for the original flavour). An F8_E4M3 / F8_E5M2 weight is dequantized to f32 with its
// scale (weights/scaled_fp8.h: ComfyUI's scale_weight or weight_scale, per tensor or per output
// row; 1 when absent): a contiguous f32 tensor, or with `as_stored` in the checkpoint's own float
// dtype (a zero-copy view of the mapped file where no un-fusing is needed; an FP8 weight as its
// dequantized bf16). Wrong shapes are reported by key.
Expected<Tensor> read_parameter(const weights::Checkpoint& checkpoint, const KeyLayout& layout,
                                const ParamSpec& spec, const H3Config& config, bool as_stored = false);

}  // namespace orochi::h3
