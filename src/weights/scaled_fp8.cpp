#include "weights/scaled_fp8.h"

#include <nlohmann/json.hpp>

namespace orochi::weights {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// "<module>.weight" -> "<module>"; empty for other keys.
std::string module_of(const std::string& weight_key) {
  return ends_with(weight_key, ".weight") ? weight_key.substr(0, weight_key.size() - 7) : std::string();
}

const char* format_of(DType dtype) { return dtype == DType::kF8E5M2 ? "float8_e5m2" : "float8_e4m3fn"; }

}  // namespace

bool is_fp8(DType dtype) { return dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2; }

bool is_scaled_fp8_companion(const std::string& name) {
  return name == "scaled_fp8" || ends_with(name, ".scaled_fp8") || ends_with(name, ".scale_weight") ||
         ends_with(name, ".scale_input") || ends_with(name, ".weight_scale") || ends_with(name, ".input_scale") ||
         ends_with(name, ".comfy_quant");
}

Status check_comfy_quant(const Checkpoint& ckpt, const std::string& key, DType stored) {
  const std::string module = module_of(key);
  if (module.empty() || !ckpt.contains(module + ".comfy_quant")) return Status::ok();
  const std::string blob_key = module + ".comfy_quant";
  OROCHI_ASSIGN_OR_RETURN(Tensor blob, ckpt.get(blob_key));
  if (blob.dtype() != DType::kU8 && blob.dtype() != DType::kI8)
    return corrupt_file(blob_key + " in " + ckpt.path() + " is " + blob.describe() + ", expected u8 JSON text");
  const Tensor bytes = blob.contiguous();
  const char* text = static_cast<const char*>(bytes.raw_data());
  const nlohmann::json j = nlohmann::json::parse(text, text + bytes.numel(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("format") || !j["format"].is_string())
    return corrupt_file(blob_key + " in " + ckpt.path() + " is not a JSON object with a \"format\"");
  const std::string format = j["format"].get<std::string>();
  if (format != "float8_e4m3fn" && format != "float8_e5m2")
    return unsupported(module + " in " + ckpt.path() + " is quantized as " + format +
                       ", which Orochi does not read (it reads float8_e4m3fn and float8_e5m2 with their scales); "
                       "use a bf16 or fp8 export of the model");
  if (!is_fp8(stored) || format != format_of(stored))
    return corrupt_file(blob_key + " says " + format + " but " + key + " is stored as " + dtype_name(stored));
  return Status::ok();
}

Expected<Tensor> dequantize_scaled_fp8(const Checkpoint& ckpt, const std::string& key, const Tensor& stored) {
  OROCHI_RETURN_IF_ERROR(check_comfy_quant(ckpt, key, stored.dtype()));
  Tensor out = stored.to(DType::kF32).contiguous();
  const std::string module = module_of(key);
  const std::string older = module + ".scale_weight", kitchen = module + ".weight_scale";
  const bool has_older = !module.empty() && ckpt.contains(older);
  const bool has_kitchen = !module.empty() && ckpt.contains(kitchen);
  if (has_older && has_kitchen)
    return invalid_argument(ckpt.path() + " holds both " + older + " and " + kitchen + " for " + key +
                            ": two scale conventions on one weight");
  if (!has_older && !has_kitchen) return out;
  const std::string& scale_key = has_older ? older : kitchen;
  OROCHI_ASSIGN_OR_RETURN(Tensor scale, ckpt.get(scale_key));
  if (!dtype_is_float(scale.dtype()))
    return shape_mismatch(scale_key + " is " + dtype_name(scale.dtype()) + ", expected a float scale");
  scale = scale.to(DType::kF32).contiguous();
  const int64_t rows = out.ndim() >= 1 ? out.dim(0) : 1;
  const int64_t cols = rows > 0 ? out.numel() / rows : 0;
  // One for the tensor, or one per output row ([rows] or [rows, 1]).
  const bool per_tensor = scale.numel() == 1 && scale.ndim() <= 1;
  const bool per_row = scale.numel() == rows && (scale.ndim() == 1 || (scale.ndim() == 2 && scale.dim(1) == 1));
  if (!per_tensor && !per_row)
    return shape_mismatch(scale_key + " has shape " + shape_to_string(scale.shape()) + ": expected one scale ([] or "
                          "[1]) or one per row ([" + std::to_string(rows) + "] or [" + std::to_string(rows) +
                          ", 1]) of " + key + " " + shape_to_string(out.shape()));
  float* d = out.data<float>();
  const float* s = scale.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float row_scale = s[per_tensor ? 0 : r];
    for (int64_t c = 0; c < cols; ++c) d[r * cols + c] *= row_scale;
  }
  return out;
}

}  // namespace orochi::weights
