// CUDA quantization (backends/cuda/quantize.h) vs the CPU reference (core/fp8.h, core/quantize.h),
// bit for bit: the e4m3 / e5m2 / int8 conversions over every tie of each format with 32 f32
// neighbours either side plus every 257th f32 bit pattern (16.7 M values: both signs, every
// exponent, NaNs, infinities), every code decoded, and per-row codes and scales of bf16 and f32
// matrices (H3's layer widths, odd widths on the scalar path, rows of zeros, outliers, Inf and NaN).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "backends/cuda/quantize.h"
#include "core/fp8.h"
#include "core/quantize.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

class CudaQuantize : public GpuTest {
 protected:
  CudaQuantize() : GpuTest(size_t{2} << 30) {}
};

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Every tie of `format` (midpoints of neighbouring finite codes) with 32 f32 neighbours either
// side, then every 257th f32 bit pattern.
std::vector<float> sweep_values(Fp8Format format) {
  std::vector<float> v;
  for (int c = 0; c < 255; ++c) {
    const float lo = fp8_to_f32(static_cast<uint8_t>(c), format), hi = fp8_to_f32(static_cast<uint8_t>(c + 1), format);
    if (!std::isfinite(lo) || !std::isfinite(hi) || c == 0x7f) continue;
    const uint32_t mid = bits_of(static_cast<float>((static_cast<double>(lo) + hi) / 2));
    for (int d = -32; d <= 32; ++d) v.push_back(float_of(mid + static_cast<uint32_t>(d)));
  }
  for (uint64_t u = 0; u <= 0xffffffffu; u += 257) v.push_back(float_of(static_cast<uint32_t>(u)));
  return v;
}

TEST_F(CudaQuantize, ConversionsMatchTheCpuBitForBit) {
  struct Case {
    const char* name;
    bool int8;
    Fp8Format format;
  };
  for (const Case& k : {Case{"e4m3", false, Fp8Format::kE4M3}, Case{"e5m2", false, Fp8Format::kE5M2},
                        Case{"int8", true, Fp8Format::kE4M3}}) {
    const size_t mark = arena().mark();
    std::vector<float> values = sweep_values(k.format);
    // int8's interesting range is small: ties k + 1/2 and their neighbours around the clamp.
    if (k.int8)
      for (int i = -260; i <= 260; ++i) {
        const float v = static_cast<float>(i) * 0.5f;
        values.insert(values.end(), {v, std::nextafter(v, INFINITY), std::nextafter(v, -INFINITY)});
      }
    const auto n = static_cast<int64_t>(values.size());
    const Tensor host = Tensor::from_floats(values, {n});
    ASSERT_OK_AND_ASSIGN(Tensor din, cuda::upload(host, arena(), DType::kF32, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dout, arena().tensor({n}, k.int8 ? DType::kI8 : DType::kU8));
    ASSERT_STATUS_OK(k.int8 ? cuda::encode_int8(din, dout, stream()) : cuda::encode_fp8(din, k.format, dout, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor got, cuda::download(dout, stream()));
    const auto* g = static_cast<const uint8_t*>(got.raw_data());
    int64_t mismatches = 0, nan_mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t want = k.int8 ? static_cast<uint8_t>(f32_to_int8(values[i])) : f32_to_fp8(values[i], k.format);
      if (g[i] == want) continue;
      ++mismatches;
      if (std::isnan(values[i])) ++nan_mismatches;
      if (mismatches <= 8)
        ADD_FAILURE() << k.name << " input " << values[i] << " (bits 0x" << std::hex << bits_of(values[i])
                      << std::dec << "): GPU " << int(g[i]) << ", CPU " << int(want);
    }
    std::printf("[cuda-op] %-22s %-28s values=%lld mismatches=%lld (NaN inputs %lld)\n", "quantize encode", k.name,
                static_cast<long long>(n), static_cast<long long>(mismatches), static_cast<long long>(nan_mismatches));
    EXPECT_EQ(mismatches, 0) << k.name;
    arena().reset(mark);
  }
}

TEST_F(CudaQuantize, EveryCodeDecodesAsTheCpu) {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  Tensor host = Tensor::empty({256}, DType::kU8);
  std::memcpy(host.raw_data(), codes.data(), 256);
  ASSERT_OK_AND_ASSIGN(Tensor din, cuda::upload(host, arena(), DType::kU8, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dout, arena().tensor({256}, DType::kF32));
  for (Fp8Format f : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
    ASSERT_STATUS_OK(cuda::decode_fp8(din, f, dout, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor got, cuda::download(dout, stream()));
    for (int c = 0; c < 256; ++c) {
      const float want = fp8_to_f32(static_cast<uint8_t>(c), f), g = got.data<float>()[c];
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(g)) << fp8_format_name(f) << " code " << c;
      else EXPECT_EQ(bits_of(g), bits_of(want)) << fp8_format_name(f) << " code " << c << ": " << g << " vs " << want;
    }
  }
}

// Rows with what quantization must survive: zeros (the clamped amax), one huge outlier, tiny
// values, and (garbage in, the same garbage out on both sides) an Inf and a NaN.
Tensor awkward_rows(int64_t R, int64_t C) {
  Tensor x = random_bf16_values({R, C}, 1.5f);
  float* p = x.data<float>();
  if (R > 0) std::fill(p, p + C, 0.0f);
  if (R > 1) p[C + C / 2] = 3.0e4f;
  if (R > 2)
    for (int64_t c = 0; c < C; ++c) p[2 * C + c] = round_to_bf16(p[2 * C + c] * 1e-5f);
  if (R > 3) p[3 * C] = INFINITY;
  if (R > 4) p[4 * C + C - 1] = NAN;
  return x;
}

TEST_F(CudaQuantize, RowsMatchTheCpuBitForBit) {
  struct Case {
    int64_t R, C;
  };
  for (DType input : {DType::kBF16, DType::kF32})
    for (DType format : {DType::kF8E4M3, DType::kI8})
      for (const Case& k : {Case{1, 16}, Case{5, 13}, Case{7, 77}, Case{40, 5376}, Case{9, 7168}, Case{6, 14336},
                            Case{4, 28672}, Case{70000, 32} /* more rows than blocks */, Case{4096, 5376}}) {
        const size_t mark = arena().mark();
        const Tensor x = awkward_rows(k.R, k.C);
        ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), input, stream()));
        ASSERT_OK_AND_ASSIGN(RowQuantized q, cuda::quantize_rows(dx, format, arena(), stream()));
        ASSERT_OK_AND_ASSIGN(Tensor codes, cuda::download(q.codes, stream()));
        ASSERT_OK_AND_ASSIGN(Tensor scales, cuda::download(q.scales, stream()));
        const RowQuantized want = quantize_rows(input == DType::kBF16 ? x.to(DType::kBF16) : x, format);
        const auto* g = static_cast<const uint8_t*>(codes.raw_data());
        const auto* w = static_cast<const uint8_t*>(want.codes.raw_data());
        int64_t code_mismatches = 0, scale_mismatches = 0;
        for (int64_t i = 0; i < x.numel(); ++i) code_mismatches += g[i] != w[i];
        for (int64_t r = 0; r < k.R; ++r)
          scale_mismatches += bits_of(scales.data<float>()[r]) != bits_of(want.scales.data<float>()[r]);
        const std::string shape = std::string(dtype_name(input)) + " [" + std::to_string(k.R) + ", " +
                                  std::to_string(k.C) + "] -> " + dtype_name(format);
        std::printf("[cuda-op] %-22s %-28s code_mismatches=%lld scale_mismatches=%lld\n", "quantize_rows",
                    shape.c_str(), static_cast<long long>(code_mismatches), static_cast<long long>(scale_mismatches));
        EXPECT_EQ(code_mismatches, 0) << shape;
        EXPECT_EQ(scale_mismatches, 0) << shape;
        arena().reset(mark);
      }
}

// An unaligned view (one byte / element off) takes the scalar path and gives the same bits.
TEST_F(CudaQuantize, UnalignedRowsTakeTheScalarPath) {
  const int64_t R = 3, C = 64;
  const Tensor x = awkward_rows(R, C);
  ASSERT_OK_AND_ASSIGN(Tensor flat, arena().tensor({R * C + 1}, DType::kBF16));
  const Tensor dx = flat.slice(0, 1, R * C + 1).view({R, C});
  ASSERT_STATUS_OK(cuda::upload_into(x, dx, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor code_flat, arena().tensor({R * C + 1}, DType::kI8));
  ASSERT_OK_AND_ASSIGN(Tensor scales, arena().tensor({R}, DType::kF32));
  const RowQuantized q{code_flat.slice(0, 1, R * C + 1).view({R, C}), scales};
  ASSERT_STATUS_OK(cuda::quantize_rows(dx, q, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor codes, cuda::download(q.codes, stream()));
  const RowQuantized want = quantize_rows(x, DType::kI8);
  EXPECT_EQ(std::memcmp(codes.raw_data(), want.codes.raw_data(), static_cast<size_t>(R * C)), 0);
}

}  // namespace
}  // namespace orochi
