// The quantization references (core/fp8.h, core/quantize.h) against two independent sources:
// PyTorch's float8_e4m3fn / float8_e5m2 / int8 arithmetic (tests/data/quantize, made by
// scripts/golden/make_quantize.py): every code's value, every tie between neighbouring codes and
// its f32 neighbours, saturation, subnormals, per-row codes and scales, the reference GEMM; and, in
// a CUDA build, the CUDA toolkit's host conversion (__nv_cvt_float_to_fp8, __NV_SATFINITE) over a
// sweep of 16 million f32 bit patterns and every tie.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/fp8.h"
#include "core/quantize.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

#if defined(OROCHI_WITH_CUDA) && __has_include(<cuda_fp8.h>)
#include <cuda_fp8.h>
#define OROCHI_TEST_CUDA_FP8_HOST 1
#endif

namespace orochi {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};

const weights::Checkpoint& golden() {
  static const weights::Checkpoint g = [] {
    Expected<weights::Checkpoint> c = weights::Checkpoint::open(testing::test_data_dir() + "/quantize/golden.safetensors");
    OROCHI_CHECK(c.has_value(), c.status().to_string());
    return std::move(c).value();
  }();
  return g;
}

Tensor get(const std::string& name) {
  Expected<Tensor> t = golden().get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return t->contiguous();
}

// The golden stores f32 vectors that hold NaNs as i32 bit patterns.
std::vector<float> floats_from_bits(const Tensor& bits) {
  OROCHI_CHECK(bits.dtype() == DType::kI32, "expected i32 bit patterns, got ", bits.describe());
  std::vector<float> v(static_cast<size_t>(bits.numel()));
  std::memcpy(v.data(), bits.raw_data(), v.size() * sizeof(float));
  return v;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::string hex(uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

TEST(Fp8, DecodesEveryCodeAsTorch) {
  for (Fp8Format f : kFormats) {
    const std::vector<float> expected = floats_from_bits(get(std::string(fp8_format_name(f)) + ".decode"));
    ASSERT_EQ(expected.size(), 256u);
    int nans = 0;
    for (int c = 0; c < 256; ++c) {
      const float got = fp8_to_f32(static_cast<uint8_t>(c), f);
      EXPECT_EQ(fp8_is_nan(static_cast<uint8_t>(c), f), std::isnan(expected[c])) << fp8_format_name(f) << " code " << c;
      if (std::isnan(expected[c])) {
        ++nans;
        EXPECT_TRUE(std::isnan(got)) << fp8_format_name(f) << " code " << c;
      } else {
        EXPECT_EQ(bits_of(got), bits_of(expected[c])) << fp8_format_name(f) << " code " << c << ": " << got << " vs "
                                                      << expected[c];
      }
    }
    EXPECT_EQ(nans, f == Fp8Format::kE4M3 ? 2 : 6) << fp8_format_name(f);
  }
  EXPECT_EQ(fp8_to_f32(0x7e, Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(fp8_to_f32(0x01, Fp8Format::kE4M3), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_to_f32(0x7b, Fp8Format::kE5M2), 57344.0f);
  EXPECT_EQ(fp8_to_f32(0x7c, Fp8Format::kE5M2), INFINITY);
  EXPECT_EQ(fp8_to_f32(0x01, Fp8Format::kE5M2), std::ldexp(1.0f, -16));
}

// Ties, their neighbours, saturation, subnormals and 4096 random values: the code torch's cast of
// the clamped value gives. A NaN input is compared as "a NaN code": torch keeps the sign (0xff),
// we and CUDA make 0x7f, which the next test pins down.
TEST(Fp8, EncodesAsTorchsSaturatingCast) {
  for (Fp8Format f : kFormats) {
    const std::string name = fp8_format_name(f);
    const std::vector<float> inputs = floats_from_bits(get(name + ".inputs"));
    const Tensor codes = get(name + ".codes");
    ASSERT_EQ(codes.numel(), static_cast<int64_t>(inputs.size()));
    ASSERT_GT(inputs.size(), 5000u);
    const auto* expected = static_cast<const uint8_t*>(codes.raw_data());
    int mismatches = 0, nan_inputs = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const uint8_t got = f32_to_fp8(inputs[i], f);
      if (std::isnan(inputs[i])) {
        ++nan_inputs;
        EXPECT_TRUE(fp8_is_nan(expected[i], f) && fp8_is_nan(got, f)) << name;
        continue;
      }
      if (got != expected[i] && ++mismatches <= 10)
        ADD_FAILURE() << name << " input " << inputs[i] << " (" << hex(bits_of(inputs[i])) << "): got "
                      << int(got) << ", torch " << int(expected[i]);
    }
    EXPECT_EQ(mismatches, 0) << name;
    EXPECT_EQ(nan_inputs, 2) << name;
  }
}

TEST(Fp8, EdgeValues) {
  const Fp8Format e4 = Fp8Format::kE4M3, e5 = Fp8Format::kE5M2;
  EXPECT_EQ(f32_to_fp8(NAN, e4), 0x7f);
  EXPECT_EQ(f32_to_fp8(-NAN, e4), 0x7f);  // canonical, sign dropped (as CUDA)
  EXPECT_EQ(f32_to_fp8(-NAN, e5), 0x7f);
  EXPECT_EQ(f32_to_fp8(INFINITY, e4), 0x7e);  // saturates, no NaN from overflow
  EXPECT_EQ(f32_to_fp8(-INFINITY, e4), 0xfe);
  EXPECT_EQ(f32_to_fp8(INFINITY, e5), 0x7b);
  EXPECT_EQ(f32_to_fp8(464.0f, e4), 0x7e);   // the tie above 448 rounds to the even 448 anyway
  EXPECT_EQ(f32_to_fp8(-0.0f, e4), 0x80);
  // Subnormal ties: 2^-10 is halfway between 0 and 2^-9 (goes to 0, even); 3·2^-10 between 1 and 2 units (to 2).
  EXPECT_EQ(f32_to_fp8(std::ldexp(1.0f, -10), e4), 0x00);
  EXPECT_EQ(f32_to_fp8(std::ldexp(3.0f, -10), e4), 0x02);
  EXPECT_EQ(f32_to_fp8(std::nextafter(std::ldexp(1.0f, -10), 1.0f), e4), 0x01);
  // The largest subnormal's tie with the smallest normal (7.5 units) rounds up into the exponent.
  EXPECT_EQ(f32_to_fp8(std::ldexp(15.0f, -10), e4), 0x08);
  // Normal ties: 1 + 1/16 is halfway between 1 and 1.125 in e4m3 (to 1.0, even mantissa).
  EXPECT_EQ(f32_to_fp8(1.0625f, e4), 0x38);
  EXPECT_EQ(f32_to_fp8(1.1875f, e4), 0x3a);  // halfway between 1.125 (odd) and 1.25: up
}

// Every non-NaN code round-trips through f32.
TEST(Fp8, EveryCodeRoundTrips) {
  for (Fp8Format f : kFormats)
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<uint8_t>(c);
      if (fp8_is_nan(code, f)) continue;
      if (f == Fp8Format::kE5M2 && (code & 0x7f) == 0x7c) {
        EXPECT_EQ(f32_to_fp8(fp8_to_f32(code, f), f), static_cast<uint8_t>((code & 0x80) | 0x7b));  // inf saturates
        continue;
      }
      EXPECT_EQ(f32_to_fp8(fp8_to_f32(code, f), f), code) << fp8_format_name(f) << " code " << c;
    }
}

#ifdef OROCHI_TEST_CUDA_FP8_HOST
// The CUDA toolkit's own rounding (the host path of the function the device code calls) on every
// tie of both formats with 32 f32 neighbours either side, and on every 257th f32 bit pattern (16.7
// million values: every exponent, both signs, NaNs and infinities included).
TEST(Fp8, MatchesTheCudaToolkitsConversion) {
  for (Fp8Format f : kFormats) {
    const __nv_fp8_interpretation_t kind = f == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2;
    int64_t checked = 0, mismatches = 0;
    const auto check = [&](uint32_t u) {
      const float x = float_of(u);
      const auto want = static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, kind));
      const uint8_t got = f32_to_fp8(x, f);
      ++checked;
      if (got != want && ++mismatches <= 10)
        ADD_FAILURE() << fp8_format_name(f) << " " << hex(u) << " (" << x << "): got " << int(got) << ", CUDA "
                      << int(want);
    };
    for (int c = 0; c < 255; ++c) {
      const float lo = fp8_to_f32(static_cast<uint8_t>(c), f), hi = fp8_to_f32(static_cast<uint8_t>(c + 1), f);
      if (!std::isfinite(lo) || !std::isfinite(hi) || c == 0x7f) continue;
      const uint32_t mid = bits_of(static_cast<float>((static_cast<double>(lo) + hi) / 2));
      for (int d = -32; d <= 32; ++d) check(mid + static_cast<uint32_t>(d));
    }
    for (uint64_t u = 0; u <= 0xffffffffu; u += 257) check(static_cast<uint32_t>(u));
    EXPECT_EQ(mismatches, 0) << fp8_format_name(f) << " over " << checked << " values";
    EXPECT_GT(checked, 16000000);
  }
}
#endif

TEST(Int8, RoundsAsTorch) {
  const std::vector<float> inputs = floats_from_bits(get("int8.inputs"));
  const Tensor codes = get("int8.codes");
  ASSERT_EQ(codes.numel(), static_cast<int64_t>(inputs.size()));
  const auto* expected = static_cast<const int8_t*>(codes.raw_data());
  int mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (f32_to_int8(inputs[i]) != expected[i] && ++mismatches <= 10)
      ADD_FAILURE() << "input " << inputs[i] << ": got " << int(f32_to_int8(inputs[i])) << ", torch "
                    << int(expected[i]);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(f32_to_int8(2.5f), 2);  // ties to even
  EXPECT_EQ(f32_to_int8(-3.5f), -4);
  EXPECT_EQ(f32_to_int8(-1000.0f), -127);  // symmetric: never -128
  EXPECT_EQ(f32_to_int8(-INFINITY), -127);
  EXPECT_EQ(f32_to_int8(NAN), 0);
}

struct RowCase {
  DType format;
  const char* name;
};
constexpr RowCase kRowCases[] = {{DType::kF8E4M3, "e4m3"}, {DType::kI8, "int8"}};

TEST(Quantize, RowsAsTorch) {
  const Tensor x = get("rows.x");  // bf16 [12, 96]
  ASSERT_EQ(x.dtype(), DType::kBF16);
  for (const RowCase& c : kRowCases) {
    const RowQuantized q = quantize_rows(x, c.format);
    ASSERT_EQ(q.codes.shape(), x.shape());
    const Tensor codes = get(std::string("rows.") + c.name + ".codes"), scales = get(std::string("rows.") + c.name + ".scales");
    EXPECT_EQ(std::memcmp(q.codes.raw_data(), codes.raw_data(), codes.nbytes()), 0) << c.name << " codes";
    for (int64_t r = 0; r < x.dim(0); ++r)
      EXPECT_EQ(bits_of(q.scales.data<float>()[r]), bits_of(scales.data<float>()[r])) << c.name << " scale of row " << r;
    // The same from f32 input: the codes depend on the values only.
    const RowQuantized qf = quantize_rows(x.to(DType::kF32), c.format);
    EXPECT_EQ(std::memcmp(qf.codes.raw_data(), codes.raw_data(), codes.nbytes()), 0) << c.name << " from f32";
  }
}

// Dequantized values are within half a step of the input: scale/2 for int8; for e4m3 half an ulp
// (at most 2^-4 relative) above the subnormal range and half a subnormal unit (scale · 2^-10) in it.
TEST(Quantize, DequantizedRowsAreWithinHalfAStep) {
  const Tensor x = get("rows.x").to(DType::kF32);
  for (const RowCase& c : kRowCases) {
    const RowQuantized q = quantize_rows(x, c.format);
    const Tensor y = dequantize_rows(q);
    for (int64_t r = 0; r < x.dim(0); ++r) {
      const float s = q.scales.data<float>()[r];
      for (int64_t k = 0; k < x.dim(1); ++k) {
        const float v = x.data<float>()[r * x.dim(1) + k], d = y.data<float>()[r * x.dim(1) + k];
        // Plus the f32 roundings of x · inverse and code · scale: a few ulps of v.
        const double half_step = c.format == DType::kI8 ? 0.5 * s : std::max(std::fabs(v) / 16.0, s * std::ldexp(1.0, -10));
        const double bound = half_step + std::fabs(v) * 1e-6;
        ASSERT_LE(std::fabs(d - v), bound) << c.name << " row " << r << " col " << k << ": " << v << " -> " << d;
      }
    }
  }
}

TEST(Quantize, ZeroAndTinyRowsGetFiniteScales) {
  Tensor x = Tensor::zeros({2, 8}, DType::kF32);
  x.data<float>()[8] = 1e-20f;
  for (const RowCase& c : kRowCases) {
    const RowQuantized q = quantize_rows(x, c.format);
    for (int64_t r = 0; r < 2; ++r) {
      EXPECT_EQ(q.scales.data<float>()[r], kMinAmax / quant_max(c.format)) << c.name;
      EXPECT_TRUE(std::isfinite(row_scale(0.0f, c.format).inverse));
    }
    const Tensor y = dequantize_rows(q);
    for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(y.data<float>()[i], 0.0f) << c.name;
  }
}

// The reference GEMM against torch's: exact dot products in f64, times (x_scale · w_scale) rounded in
// f32, plus bias, in f64 then rounded to f32. Ours fuses the last multiply-add in f32 instead, which
// can differ by one rounding of the sum: at most 1 ulp.
TEST(Quantize, ReferenceGemmAsTorch) {
  const Tensor x = get("rows.x"), w = get("gemm.w"), bias = get("gemm.bias");
  for (const RowCase& c : kRowCases) {
    const RowQuantized qx = quantize_rows(x, c.format), qw = quantize_rows(w, c.format);
    const Tensor w_codes = get(std::string("gemm.") + c.name + ".w_codes");
    ASSERT_EQ(std::memcmp(qw.codes.raw_data(), w_codes.raw_data(), w_codes.nbytes()), 0) << c.name;
    const Tensor y = quantized_linear(qx, qw, &bias);
    const Tensor expected = get(std::string("gemm.") + c.name + ".y");
    ASSERT_EQ(y.shape(), expected.shape());
    int64_t worst = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float a = y.data<float>()[i], b = expected.data<float>()[i];
      const int64_t ulps = std::llabs(static_cast<int64_t>(static_cast<int32_t>(bits_of(a))) -
                                      static_cast<int32_t>(bits_of(b)));
      worst = std::max(worst, a == b ? int64_t{0} : ulps);
    }
    EXPECT_LE(worst, 1) << c.name;
    // Against the plain dequantized product (what the codes mean): close, not equal.
    const Tensor dx = dequantize_rows(qx), dw = dequantize_rows(qw);
    double err = 0, ref = 0;
    for (int64_t m = 0; m < y.dim(0); ++m)
      for (int64_t n = 0; n < y.dim(1); ++n) {
        double acc = bias.data<float>()[n];
        for (int64_t k = 0; k < x.dim(1); ++k)
          acc += static_cast<double>(dx.data<float>()[m * x.dim(1) + k]) * dw.data<float>()[n * x.dim(1) + k];
        err += std::pow(y.data<float>()[m * y.dim(1) + n] - acc, 2);
        ref += acc * acc;
      }
    EXPECT_LE(std::sqrt(err / ref), 1e-6) << c.name;
  }
}

TEST(Quantize, RefusesWhatIsNotAQuantizedOperand) {
  const Tensor x = Tensor::zeros({2, 4}, DType::kF32);
  EXPECT_THROW(quantize_rows(x, DType::kBF16), InternalError);
  EXPECT_THROW(quantize_rows(Tensor::zeros({8}, DType::kF32), DType::kI8), InternalError);
  const RowQuantized a = quantize_rows(x, DType::kI8), b = quantize_rows(x, DType::kF8E4M3);
  EXPECT_THROW(quantized_linear(a, b, nullptr), InternalError);  // formats differ
  const RowQuantized c = quantize_rows(Tensor::zeros({2, 5}, DType::kF32), DType::kI8);
  EXPECT_THROW(quantized_linear(a, c, nullptr), InternalError);  // K differs
}

}  // namespace
}  // namespace orochi
