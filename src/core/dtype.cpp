#include "core/dtype.h"

#include <cmath>

#include "core/check.h"
#include "core/fp8.h"

namespace orochi {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kBF16: case DType::kF16: case DType::kI16: return 2;
    case DType::kF8E4M3: case DType::kF8E5M2: case DType::kI8: case DType::kU8: case DType::kBool: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kF8E4M3: return "f8e4m3";
    case DType::kF8E5M2: return "f8e5m2";
    case DType::kF64: return "f64";
    case DType::kI64: return "i64";
    case DType::kI32: return "i32";
    case DType::kI16: return "i16";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kBool: return "bool";
  }
  return "?";
}

namespace {
struct NamePair {
  DType dtype;
  const char* name;
};
constexpr NamePair kSafetensorsNames[] = {
    {DType::kF32, "F32"}, {DType::kBF16, "BF16"}, {DType::kF16, "F16"},
    {DType::kF8E4M3, "F8_E4M3"}, {DType::kF64, "F64"}, {DType::kI64, "I64"},
    {DType::kI32, "I32"}, {DType::kI16, "I16"}, {DType::kI8, "I8"},
    {DType::kU8, "U8"}, {DType::kBool, "BOOL"}, {DType::kF8E5M2, "F8_E5M2"},
};
}  // namespace

const char* dtype_safetensors_name(DType dtype) {
  for (const auto& p : kSafetensorsNames)
    if (p.dtype == dtype) return p.name;
  return "?";
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& p : kSafetensorsNames)
    if (name == p.name) return p.dtype;
  return std::nullopt;
}

bool dtype_is_float(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 ||
         dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2 || dtype == DType::kF64;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp != 0 && exp != 31) {
    // Normal: rebias the exponent (15 -> 127) and widen the mantissa; exact, and fast in loops.
    const uint32_t bits = (sign << 31) | ((exp + 112u) << 23) | (mant << 13);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  const float mag = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)  // zero / subnormal
                             : (mant ? NAN : INFINITY);
  return sign ? -mag : mag;
}

uint16_t f32_to_f16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in f16: scale so the f16 subnormal unit (2^-24) becomes 1, round even.
    float a;
    std::memcpy(&a, &abs, sizeof a);
    const float scaled = std::nearbyint(std::ldexp(a, 24));  // default FE_TONEAREST
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(scaled));
  }
  // Normal: rebias exponent, round mantissa 23 -> 10 bits to nearest even.
  uint32_t r = abs - 0x38000000u;  // exponent bias 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

// The fp8 rounding is defined once, in core/fp8.
float f8e4m3_to_f32(uint8_t b) { return fp8_to_f32(b, Fp8Format::kE4M3); }
uint8_t f32_to_f8e4m3(float value) { return f32_to_fp8(value, Fp8Format::kE4M3); }

void convert_to_f32(DType dtype, const void* src, float* dst, size_t n, float scale) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, n * 4); return;
    case DType::kBF16: {
      auto s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::kF16: {
      auto s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::kF8E4M3: {
      auto s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f8e4m3_to_f32(s[i]) * scale;
      return;
    }
    case DType::kF8E5M2: {
      auto s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = fp8_to_f32(s[i], Fp8Format::kE5M2) * scale;
      return;
    }
    case DType::kF64: {
      auto s = static_cast<const double*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::kI64: {
      auto s = static_cast<const int64_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::kI32: {
      auto s = static_cast<const int32_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::kI16: {
      auto s = static_cast<const int16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::kI8: {
      auto s = static_cast<const int8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::kU8: case DType::kBool: {
      auto s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
  }
}

void convert_from_f32(DType dtype, const float* src, void* dst, size_t n, float scale) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, n * 4); return;
    case DType::kBF16: {
      auto d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::kF16: {
      auto d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::kF8E4M3: {
      auto d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f8e4m3(src[i] / scale);
      return;
    }
    case DType::kF8E5M2: {
      auto d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_fp8(src[i] / scale, Fp8Format::kE5M2);
      return;
    }
    case DType::kF64: {
      auto d = static_cast<double*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = src[i];
      return;
    }
    default:
      OROCHI_CHECK(false, "convert_from_f32 to ", dtype_name(dtype), " is not a float conversion");
  }
}

}  // namespace orochi
