// A LoRA file read into (module, down, up, alpha) pairs, model-agnostic: which suffix convention it
// uses is detected from its keys, and the module names stay the file's own (a model maps them).
// Conventions read:
//   PEFT          MODULE.lora_A.weight [r, in], MODULE.lora_B.weight [out, r] (diffusers, ComfyUI)
//   PEFT default  MODULE.lora_A.default.weight / lora_B.default.weight (DiffSynth)
//   kohya         MODULE.lora_down.weight / lora_up.weight (kohya, musubi-tuner)
// and in any of them an optional MODULE.alpha scalar (scale alpha / rank; none: scale 1).
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
  int64_t rank() const { return down.dim(0); }
  float scale() const { return alpha ? *alpha / static_cast<float>(rank()) : 1.0f; }
};

struct LoraFile {
  std::string path;
  LoraSuffixes suffixes = LoraSuffixes::kPeft;
  std::vector<LoraPair> pairs;  // sorted by module
};

// Reads `path` (one .safetensors file). Refused, naming the key: a key of no known suffix, suffixes
// of two conventions in one file, a module with a down and no up (or the reverse), an alpha without
// its pair, non-float or non-2-D factors, ranks that differ between down and up, an alpha that is
// not one finite positive number.
Expected<LoraFile> read_lora_file(const std::string& path);

}  // namespace orochi::weights
