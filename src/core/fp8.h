// The 8-bit number formats of the quantized linears, element by element: OCP FP8 e4m3fn (no
// infinities, max 448, NaN = S.1111.111) and e5m2 (IEEE-like, max 57344, with infinities), and
// symmetric int8. The one definition of their rounding, which the CUDA conversions match bit for
// bit (cvt.rn.satfinite on sm_89+, tests/cuda/test_cuda_quantize.cpp):
//  - round to nearest, ties to even, subnormals included;
//  - saturating: a magnitude at or above the largest finite value, infinity included, becomes the
//    largest finite value with its sign (what scaled quantization wants: an outlier clips instead
//    of turning the whole dot product into NaN);
//  - NaN of either sign becomes the one canonical NaN code 0x7f (as CUDA's conversions make it);
//  - int8 clamps to [-127, 127] (symmetric: -128 is never produced) and maps NaN to 0.
#pragma once

#include <cstdint>

namespace orochi {

enum class Fp8Format : uint8_t { kE4M3, kE5M2 };

const char* fp8_format_name(Fp8Format format);  // "e4m3" / "e5m2"
// The largest finite value: 448 (e4m3) or 57344 (e5m2).
float fp8_max(Fp8Format format);
// The code of the largest finite positive value: 0x7e (e4m3) or 0x7b (e5m2).
uint8_t fp8_max_code(Fp8Format format);

uint8_t f32_to_fp8(float value, Fp8Format format);
// Exact; NaN codes give NaN, e5m2's 0x7c / 0xfc give +-infinity.
float fp8_to_f32(uint8_t code, Fp8Format format);
bool fp8_is_nan(uint8_t code, Fp8Format format);

inline constexpr int kInt8Max = 127;
int8_t f32_to_int8(float value);

}  // namespace orochi
