// Element types and their conversions to and from fp32. Conversions round to nearest even,
// as PyTorch's .to() does, so bf16/fp16 tensors written here match torch bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace orochi {

enum class DType : uint8_t {
  kF32,
  kBF16,
  kF16,
  kF8E4M3,  // OCP e4m3fn: no infinities, max 448; paired with a per-tensor scale
  kF64,
  kI64,
  kI32,
  kI16,
  kI8,
  kU8,
  kBool,
  kF8E5M2,  // e5m2: IEEE-like, max 57344, with infinities; stored weights (ComfyUI's fp8_e5m2), read to f32
};

size_t dtype_size(DType dtype);
// Our short name: "f32", "bf16", ...
const char* dtype_name(DType dtype);
// safetensors' name: "F32", "BF16", "F8_E4M3", "F8_E5M2", ...
const char* dtype_safetensors_name(DType dtype);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
bool dtype_is_float(DType dtype);

inline float bf16_to_f32(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t f32_to_bf16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float f8e4m3_to_f32(uint8_t bits);
// Saturates to +-448 (the e4m3fn range), NaN becomes 0x7f: core/fp8.h defines the rounding.
uint8_t f32_to_f8e4m3(float value);

// Rounds through a narrower type and back: what a PyTorch op writing that dtype would keep.
inline float round_to_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }

// Converts `count` elements of `src` (of `dtype`, times `scale` for fp8) into fp32.
// Integer and bool types convert by value.
void convert_to_f32(DType dtype, const void* src, float* dst, size_t count, float scale = 1.0f);
// fp32 -> dtype (float types only; fp8 divides by `scale` first).
void convert_from_f32(DType dtype, const float* src, void* dst, size_t count, float scale = 1.0f);

}  // namespace orochi
