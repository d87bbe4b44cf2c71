// The precision the denoiser's linears run in, an engine option applied at load (DESIGN.md):
// bf16 (as released), fp8 (e4m3 weights per output channel, activations per token; Hopper and Ada)
// or int8 (W8A8; GPUs without FP8). What each stores is core/quantize.h's scheme; which parameters
// a model quantizes is the model's decision (h3::is_quantized_linear).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"

namespace orochi {

enum class Precision : uint8_t { kBf16, kFp8, kInt8 };

const char* precision_name(Precision precision);  // "bf16", "fp8", "int8"
// "bf16", "fp8" or "int8"; anything else is invalid_argument naming the three.
Expected<Precision> parse_precision(std::string_view text);
// The code format of a quantized weight: DType::kF8E4M3 (fp8) or DType::kI8 (int8); kBF16 for bf16.
DType precision_weight_dtype(Precision precision);

// Rows of a quantized linear's GEMM accumulator (f32 [rows, widest quantized output]): int8 always
// dequantizes in our epilogue, so its linears run in chunks of this many rows (each chunk still a
// large GEMM); fp8 needs it only where cuBLASLt refuses outer-vector scales, so it gets a smaller
// one. One place for every model's runner and the planner.
int64_t quantized_accumulator_rows(Precision precision, int64_t rows);

}  // namespace orochi
