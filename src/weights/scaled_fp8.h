// ComfyUI's FP8 weight files, both conventions (MODELS_H3.md §7, issue 24): a weight stored as
// F8_E4M3 or F8_E5M2 is `code · scale`, with the scale beside it under
//   <module>.scale_weight   the older "scaled fp8" files (a `scaled_fp8` marker tensor, and an unused
//                           <module>.scale_input), or
//   <module>.weight_scale   comfy-kitchen's quantized layers (an unused <module>.input_scale, and
//                           <module>.comfy_quant: the layer's JSON {"format": "float8_e4m3fn"} as u8),
// one scale for the tensor (shape [] or [1]) or one per output row ([rows] or [rows, 1]: the
// per-channel convention); no scale means 1. Read here to f32 (exact codes, one f32 product per
// element, which a bf16 upload then rounds once more: what ComfyUI's `code.to(bf16) * scale` keeps).
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "weights/checkpoint.h"

namespace orochi::weights {

bool is_fp8(DType dtype);  // F8_E4M3, F8_E5M2

// The keys beside FP8 weights that are not parameters: the scales, the unused input scales, the
// `scaled_fp8` marker and comfy_quant blobs.
bool is_scaled_fp8_companion(const std::string& name);

// `stored` (the checkpoint's tensor `key`, F8_E4M3 or F8_E5M2) times its scale, as contiguous f32.
// Refused naming the keys: both scale conventions on one weight, a scale of another shape, a
// non-float scale, and a comfy_quant format that is not this dtype's float8 (check_comfy_quant).
Expected<Tensor> dequantize_scaled_fp8(const Checkpoint& checkpoint, const std::string& key, const Tensor& stored);

// A weight's comfy_quant blob (if any) against its stored dtype: the formats float8_e4m3fn /
// float8_e5m2 must match F8_E4M3 / F8_E5M2; any other format (nvfp4, int8 blockwise, ...) is
// unsupported naming the layer and the format, before its codes are read as numbers.
Status check_comfy_quant(const Checkpoint& checkpoint, const std::string& key, DType stored);

}  // namespace orochi::weights
