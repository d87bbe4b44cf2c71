// LoRAs for the MiniMax-H3 transformer: a LoRA file's pairs mapped onto our (diffusers) parameter
// names with their scales, and merged into host weights as W += strength · scale · B·A in f32, before
// any upload (so the CPU forward and the GPU upload both see the merged weights).
//
// Formats (MODELS_H3.md §7), told apart by key suffix and module names:
//   diffusers   transformer.transformer_blocks.i.attn.to_q.lora_A.weight ... (transformer_ref.: Ref2VA)
//   original    [model.]diffusion_model.blocks.i.attn.qkv_proj.lora_A.weight (ComfyUI): the fused qkv B is
//               [q_all; k_all; v_all] (contiguous thirds); mlp.fc1's B rows are [gate; value]
//   DiffSynth   blocks.i.attn.qkv_proj.lora_A.default.weight: the fused qkv B is per-head interleaved
//   kohya       lora_unet_blocks_0_attn_qkv_proj.lora_down.weight / lora_up / .alpha (musubi-tuner): the
//               fused qkv B in contiguous thirds, as diffusers 0.42.1's converter reads it (every producer but
//               DiffSynth trains on the reference implementation's load-time [q_all; k_all; v_all] reorder)
// A fused qkv shares A across q/k/v and splits B; fc1's B halves are swapped to [value; gate]. The
// golden (scripts/golden/make_h3_lora.py, tests/test_h3_lora_golden.cpp) holds one PEFT LoRA in all
// four formats and diffusers + PEFT's unmerged forward with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3/config.h"
#include "models/h3/weights.h"
#include "weights/lora_file.h"

namespace orochi::h3 {

enum class LoraFormat { kDiffusers, kOriginal, kDiffSynth, kKohya };
const char* lora_format_name(LoraFormat format);

// The partition a checkpoint folder holds: transformer/ (t2va, fl2va) or transformer_ref/ (ref2va).
enum class LoraPartition { kTransformer, kTransformerRef };

// One low-rank update of one parameter: delta = scale · up · down.
struct LoraDelta {
  std::string param;    // diffusers name, e.g. "transformer_blocks.0.attn.to_q.weight"
  std::string source;   // the file's up key it came from (for messages)
  Tensor down;          // f32 [r, in]
  Tensor up;            // f32 [out, r] (our row order)
  float scale = 1.0f;   // alpha / r, or 1 without alpha
};

// One full-rank delta (ComfyUI's .diff / .diff_b): param += strength · delta.
struct FullDelta {
  std::string param;   // diffusers name: a linear's ".weight" or ".bias", or a norm's ".weight"
  std::string source;  // the file's key
  Tensor delta;        // f32, the parameter's shape (our row order)
};

struct H3Lora {
  std::string path;
  LoraFormat format = LoraFormat::kDiffusers;
  std::vector<LoraDelta> deltas;  // at most one per parameter
  std::vector<FullDelta> full;    // at most one per parameter
};

// Maps every pair and full-rank delta of `file` onto this config's parameters (a fused qkv's .diff
// split as its B would be, fc1's halves swapped). Refused, naming the key: a module that matches no
// linear layer of the model (no layer at all for a .diff), a LoRA for the other partition, a factor or
// delta whose shape does not fit the layer, a .diff_b for a layer without a bias, two pairs (or two
// deltas) targeting one parameter.
Expected<H3Lora> map_lora(const weights::LoraFile& file, const H3Config& config,
                          LoraPartition partition = LoraPartition::kTransformer);
// How many parameters `lora` changes (low-rank pairs and full-rank deltas, each parameter once).
size_t changed_parameters(const H3Lora& lora);

// The partition a file names for itself (diffusers' `transformer.` / `transformer_ref.` prefixes), or
// none when its keys do not say (the original, DiffSynth and kohya names).
std::optional<LoraPartition> declared_partition(const weights::LoraFile& file);

// read_lora_file + map_lora.
Expected<H3Lora> read_lora(const std::string& path, const H3Config& config,
                           LoraPartition partition = LoraPartition::kTransformer);

// W += strength · scale · up·down for every delta, computed in f32; a merged parameter becomes a
// fresh tensor (the stored one, possibly a read-only bf16 view of a file, is not written): bf16 when
// the stored one is bf16 (rounded once from the f32 sum, as the GPU upload of an f32 merge would
// round), f32 otherwise. Rows run in parallel (OpenMP), with the same sums on any thread count.
// Strength 0 changes nothing (the weights stay bit-identical). A non-finite strength is refused.
// Full-rank deltas: param += strength · delta, with the same precision rule.
Status merge_lora(H3Weights& weights, const H3Lora& lora, float strength);

// PEFT's unmerged semantics instead of a merge: every delta becomes an adapter of its layer
// (LinearWeights::adapters, scale strength · alpha/r), and the CPU forward adds strength · scale ·
// up·(down·x) to the layer's base output. The weights are untouched, so base and adapters keep their
// own precision (the check of the merge's rounding). shard_weights slices adapters by their layer's
// tensor-parallel rule. The GPU upload reads weights only: merge (merge_lora) for a GPU run. Full-rank
// deltas have no low-rank form and are merged (as merge_lora does) on this path too.
Status attach_lora(H3Weights& weights, const H3Lora& lora, float strength);

// Every 2-D (linear) weight of `weights` by its diffusers name.
std::vector<std::pair<std::string, Tensor*>> linear_weights(H3Weights& weights);
// Every linear layer of `weights` by its diffusers weight name ("....weight").
std::vector<std::pair<std::string, LinearWeights*>> linear_layers(H3Weights& weights);

}  // namespace orochi::h3
