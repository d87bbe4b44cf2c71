// A LoRA file read into (module, down, up, alpha) pairs, model-agnostic: which suffix convention it
// uses is detected from its keys, and the module names stay the file's own (a model maps them).
// Conventions read:
//   PEFT          MODULE.lora_A.weight [r, in], MODULE.lora_B.weight [out, r] (diffusers, ComfyUI)
//   PEFT default  MODULE.lora_A.default.weight / lora_B.default.weight (DiffSynth)
//   kohya         MODULE.lora_down.weight / lora_up.weight (kohya, musubi-tuner)
// plus ComfyUI's full-rank deltas MODULE.diff / MODULE.diff_b in any of them (or alone).
// A module's alpha (scale alpha / rank) comes from, in order: its MODULE.alpha scalar; else, in a file
// without .alpha keys, the `lora_adapter_metadata` JSON of __metadata__ that diffusers' save_lora_weights
// writes (PEFT's LoraConfig under a component prefix: lora_alpha, alpha_pattern matched as PEFT's
// get_pattern_key does, use_rslora: alpha / sqrt(rank); use_dora refused); else __metadata__'s "alpha"
// (one network alpha for every module, lightx2v's convention, as diffusers reads it); else none (scale 1).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::weights {

enum class LoraSuffixes { kPeft, kPeftDefault, kKohya };
const char* lora_suffixes_name(LoraSuffixes s);

struct LoraPair {
  std::string module;           // the key before the suffix, e.g. "transformer.proj_out"
  std::string down_key, up_key; // the file's keys, for error messages
  Tensor down;                  // A, [r, in] as stored (zero-copy view)
  Tensor up;                    // B, [out, r] as stored
  std::optional<float> alpha;
  bool rslora = false;          // PEFT's use_rslora: the scale is alpha / sqrt(rank)
  int64_t rank() const { return down.dim(0); }
  float scale() const;
};

// A full-rank delta, ComfyUI's MODULE.diff (weight += strength · diff; a linear's [out, in] or a norm's
// [size]) or MODULE.diff_b (bias += strength · diff_b), alone in a file or beside LoRA pairs.
struct LoraDiff {
  std::string module;
  std::string key;     // the file's key, for error messages
  Tensor delta;        // as stored (zero-copy view)
  bool bias = false;   // .diff_b
};

struct LoraFile {
  std::string path;
  LoraSuffixes suffixes = LoraSuffixes::kPeft;
  std::vector<LoraPair> pairs;  // sorted by module
  std::vector<LoraDiff> diffs;  // sorted by module, .diff before .diff_b
};

// Reads `path` (one .safetensors file). Refused, naming the key: a key of no known suffix, suffixes
// of two conventions in one file, a module with a down and no up (or the reverse), an alpha without
// its pair, non-float or non-2-D factors, ranks that differ between down and up, an alpha that is
// not one finite positive number, metadata that is not what the list above says (naming the entry).
Expected<LoraFile> read_lora_file(const std::string& path);

}  // namespace orochi::weights
