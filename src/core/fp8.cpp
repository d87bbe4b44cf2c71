#include "core/fp8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace orochi {
namespace {

struct Fp8Layout {
  int mantissa_bits;
  int bias;
  uint8_t max_code;
  float max;
};

constexpr Fp8Layout layout_of(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? Fp8Layout{3, 7, 0x7e, 448.0f} : Fp8Layout{2, 15, 0x7b, 57344.0f};
}

constexpr uint8_t kCanonicalNan = 0x7f;

}  // namespace

const char* fp8_format_name(Fp8Format format) { return format == Fp8Format::kE4M3 ? "e4m3" : "e5m2"; }
float fp8_max(Fp8Format format) { return layout_of(format).max; }
uint8_t fp8_max_code(Fp8Format format) { return layout_of(format).max_code; }

uint8_t f32_to_fp8(float value, Fp8Format format) {
  const Fp8Layout f = layout_of(format);
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return kCanonicalNan;
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  float magnitude;
  std::memcpy(&magnitude, &abs_bits, sizeof magnitude);
  // The largest finite value is a code, and rounding is monotonic: everything from it up saturates,
  // and everything below it rounds to at most it.
  if (magnitude >= f.max) return sign | f.max_code;
  const int min_normal_exponent = 1 - f.bias;
  const int exponent = static_cast<int>(abs_bits >> 23) - 127;  // f32 subnormals: -127, below any fp8 normal
  if (exponent < min_normal_exponent) {
    // fp8 subnormal: count units of 2^(min_normal_exponent - mantissa_bits). Scaling by a power of
    // two is exact, so the one rounding is nearbyint's (nearest even in the default mode). A count
    // of 2^mantissa_bits is the smallest normal, whose code is that same number.
    const float units = std::nearbyint(std::ldexp(magnitude, f.mantissa_bits - min_normal_exponent));
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(units));
  }
  // fp8 normal: rebias the exponent and keep the top mantissa bits, rounding the dropped ones to
  // nearest even; a carry out of the mantissa steps the exponent, as the code layout wants.
  const int dropped = 23 - f.mantissa_bits;
  const uint32_t mantissa = abs_bits & 0x7fffffu;
  const uint32_t half = 1u << (dropped - 1);
  const uint32_t rest = mantissa & ((1u << dropped) - 1);
  uint32_t code = (static_cast<uint32_t>(exponent + f.bias) << f.mantissa_bits) | (mantissa >> dropped);
  if (rest > half || (rest == half && (code & 1u))) ++code;
  return static_cast<uint8_t>(sign | code);
}

bool fp8_is_nan(uint8_t code, Fp8Format format) {
  const uint8_t magnitude = code & 0x7f;
  return format == Fp8Format::kE4M3 ? magnitude == 0x7f : magnitude > 0x7c;
}

float fp8_to_f32(uint8_t code, Fp8Format format) {
  const Fp8Layout f = layout_of(format);
  const bool negative = (code & 0x80) != 0;
  if (fp8_is_nan(code, format)) return negative ? -NAN : NAN;
  if (format == Fp8Format::kE5M2 && (code & 0x7f) == 0x7c) return negative ? -INFINITY : INFINITY;
  const int exponent_field = (code & 0x7f) >> f.mantissa_bits;
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const float magnitude =
      exponent_field == 0
          ? std::ldexp(static_cast<float>(mantissa), 1 - f.bias - f.mantissa_bits)
          : std::ldexp(static_cast<float>(mantissa | (1 << f.mantissa_bits)), exponent_field - f.bias - f.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

int8_t f32_to_int8(float value) {
  if (std::isnan(value)) return 0;
  return static_cast<int8_t>(std::nearbyint(std::clamp(value, -static_cast<float>(kInt8Max), static_cast<float>(kInt8Max))));
}

}  // namespace orochi
