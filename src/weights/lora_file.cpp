#include "weights/lora_file.h"

#include <cmath>
#include <map>
#include <memory>

#include "weights/safetensors.h"

namespace orochi::weights {
namespace {

enum class Part { kDown, kUp, kAlpha };

struct Suffix {
  const char* text;
  std::optional<LoraSuffixes> convention;  // none: .alpha, allowed in every convention
  Part part;
};

// Longest first, so ".lora_A.default.weight" is not read as ".weight" of something else.
constexpr Suffix kSuffixes[] = {
    {".lora_A.default.weight", LoraSuffixes::kPeftDefault, Part::kDown},
    {".lora_B.default.weight", LoraSuffixes::kPeftDefault, Part::kUp},
    {".lora_down.weight", LoraSuffixes::kKohya, Part::kDown},
    {".lora_up.weight", LoraSuffixes::kKohya, Part::kUp},
    {".lora_A.weight", LoraSuffixes::kPeft, Part::kDown},
    {".lora_B.weight", LoraSuffixes::kPeft, Part::kUp},
    {".alpha", std::nullopt, Part::kAlpha},
};

struct Partial {
  const TensorInfo* down = nullptr;
  const TensorInfo* up = nullptr;
  const TensorInfo* alpha = nullptr;
};

}  // namespace

const char* lora_suffixes_name(LoraSuffixes s) {
  switch (s) {
    case LoraSuffixes::kPeft: return "PEFT (lora_A/lora_B)";
    case LoraSuffixes::kPeftDefault: return "PEFT with adapter 'default' (lora_A.default/lora_B.default, DiffSynth)";
    case LoraSuffixes::kKohya: return "kohya (lora_down/lora_up)";
  }
  return "?";
}

Expected<LoraFile> read_lora_file(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> file, SafetensorsFile::open(path));
  const std::string where = "LoRA '" + path + "'";
  if (file->tensors().empty()) return invalid_argument(where + " holds no tensors");
  std::optional<LoraSuffixes> convention;
  std::string convention_key;
  std::map<std::string, Partial> modules;
  for (const TensorInfo& info : file->tensors()) {
    const Suffix* found = nullptr;
    for (const Suffix& s : kSuffixes)
      if (info.name.ends_with(s.text) && info.name.size() > std::string_view(s.text).size()) {
        found = &s;
        break;
      }
    if (!found)
      return invalid_argument(where + ": key '" + info.name +
                              "' is not a LoRA factor: expected MODULE.lora_A.weight / lora_B.weight (PEFT, diffusers), "
                              ".lora_A.default.weight / .lora_B.default.weight (DiffSynth), .lora_down.weight / "
                              ".lora_up.weight (kohya, musubi) or .alpha");
    if (found->convention) {
      if (convention && *convention != *found->convention)
        return invalid_argument(where + " mixes two key conventions: '" + convention_key + "' is " +
                                lora_suffixes_name(*convention) + ", '" + info.name + "' is " +
                                lora_suffixes_name(*found->convention));
      convention = found->convention;
      convention_key = info.name;
    }
    Partial& m = modules[info.name.substr(0, info.name.size() - std::string_view(found->text).size())];
    (found->part == Part::kDown ? m.down : found->part == Part::kUp ? m.up : m.alpha) = &info;
  }
  if (!convention) return invalid_argument(where + " holds only .alpha keys, no LoRA factors");

  LoraFile out;
  out.path = path;
  out.suffixes = *convention;
  for (const auto& [module, m] : modules) {
    if (!m.down || !m.up) {
      const TensorInfo* have = m.down ? m.down : m.up ? m.up : m.alpha;
      return invalid_argument(where + ": '" + have->name + "' has no " + (m.down ? "up (B)" : "down (A)") +
                              " factor beside it for module '" + module + "'");
    }
    LoraPair p;
    p.module = module;
    p.down_key = m.down->name;
    p.up_key = m.up->name;
    p.down = file->tensor(*m.down);
    p.up = file->tensor(*m.up);
    for (const auto& [key, t] : {std::pair{p.down_key, p.down}, std::pair{p.up_key, p.up}}) {
      if (!dtype_is_float(t.dtype())) return invalid_argument(where + ": '" + key + "' is " + dtype_name(t.dtype()) + ", expected a float type");
      if (t.ndim() != 2 || t.numel() == 0)
        return shape_mismatch(where + ": '" + key + "' has shape " + shape_to_string(t.shape()) +
                              ", expected a non-empty 2-D factor ([rank, in] for A, [out, rank] for B)");
    }
    if (p.up.dim(1) != p.down.dim(0))
      return shape_mismatch(where + ": the ranks of '" + p.down_key + "' " + shape_to_string(p.down.shape()) + " and '" +
                            p.up_key + "' " + shape_to_string(p.up.shape()) +
                            " differ (A is [rank, in], B is [out, rank])");
    if (m.alpha) {
      const Tensor a = file->tensor(*m.alpha);
      if (!dtype_is_float(a.dtype()) || a.numel() != 1)
        return invalid_argument(where + ": '" + m.alpha->name + "' is " + a.describe() + ", expected one float");
      const float v = a.to(DType::kF32).data<float>()[0];
      if (!std::isfinite(v) || v <= 0)
        return invalid_argument(where + ": '" + m.alpha->name + "' is " + std::to_string(v) + ", expected a positive alpha");
      p.alpha = v;
    }
    out.pairs.push_back(std::move(p));
  }
  return out;
}

}  // namespace orochi::weights
