// Per-tensor quantization (core/quantize_tensor.h), the CPU twin of the cuDNN FP8 attention's
// quantize kernels: one scale from the whole tensor's amax, codes as core/quantize.h's, the column
// offset subtracted before both, column means in the documented tile order, the bf16 dequantize.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/fp8.h"
#include "core/quantize.h"
#include "core/quantize_tensor.h"
#include "support/random.h"

namespace orochi {
namespace {

Tensor matrix(int64_t R, int64_t C, const std::vector<float>& values) {
  Tensor t = Tensor::empty({R, C}, DType::kF32);
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

uint8_t code_at(const TensorQuantized& q, int64_t i) { return static_cast<const uint8_t*>(q.codes.raw_data())[i]; }

TEST(QuantizeTensor, OneScaleFromTheWholeTensorsAmax) {
  // amax 4 over both rows: scale 4/448, so 4 is the largest code and 1 codes 112 · 1 = e4m3(112).
  const TensorQuantized q = quantize_tensor(matrix(2, 3, {1.0f, -0.5f, 0.0f, 2.0f, -4.0f, 3.0f}));
  EXPECT_EQ(q.amax, 4.0f);
  EXPECT_EQ(q.scale.scale, 4.0f / 448.0f);
  EXPECT_EQ(q.scale.inverse, 448.0f / 4.0f);
  EXPECT_EQ(code_at(q, 4), 0xfe);  // -448
  EXPECT_EQ(code_at(q, 2), 0x00);
  EXPECT_EQ(code_at(q, 0), f32_to_fp8(112.0f, Fp8Format::kE4M3));
  EXPECT_EQ(code_at(q, 5), f32_to_fp8(336.0f, Fp8Format::kE4M3));
  EXPECT_EQ(q.codes.shape(), (Shape{2, 3}));
}

TEST(QuantizeTensor, AnAllZeroTensorGetsZeroCodesAndAFiniteScale) {
  const TensorQuantized q = quantize_tensor(matrix(2, 2, {0, 0, 0, 0}));
  EXPECT_EQ(q.scale.scale, kMinAmax / 448.0f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(code_at(q, i), 0);
}

TEST(QuantizeTensor, TheColumnOffsetComesOffBeforeTheAmaxAndTheCodes) {
  // A shared per-column bias (the keys' channel bias of DiTs) would set the scale; without it the
  // spread around the mean uses the whole e4m3 range.
  const Tensor x = matrix(2, 2, {100.0f, -50.0f, 102.0f, -52.0f});
  const std::vector<float> mean = column_means(x);
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_EQ(mean[0], 101.0f);
  EXPECT_EQ(mean[1], -51.0f);
  const TensorQuantized plain = quantize_tensor(x), smooth = quantize_tensor(x, mean);
  EXPECT_EQ(plain.amax, 102.0f);
  EXPECT_EQ(smooth.amax, 1.0f);
  EXPECT_EQ(code_at(smooth, 0), 0xfe);  // -1 -> -448
  EXPECT_EQ(code_at(smooth, 1), 0x7e);  // +1 -> 448
}

TEST(QuantizeTensor, ColumnMeansSumTilesInOrder) {
  // 1,300 rows: three tiles of 512 (the last partial). The mean is the documented f32 order's, and
  // close to the exact mean.
  const int64_t R = 1300, C = 16;
  const Tensor x = testing::random_normal({R, C}, 7, 3.0f).to(DType::kBF16);
  const std::vector<float> mean = column_means(x);
  const Tensor xf = x.to(DType::kF32);
  for (int64_t c = 0; c < C; ++c) {
    float partial[3] = {0, 0, 0};
    double exact = 0;
    for (int64_t r = 0; r < R; ++r) {
      partial[r / kColumnMeanTileRows] += xf.data<float>()[r * C + c];
      exact += xf.data<float>()[r * C + c];
    }
    const float expected = ((0.0f + partial[0]) + partial[1] + partial[2]) / static_cast<float>(R);
    EXPECT_EQ(mean[c], expected) << "column " << c;
    EXPECT_NEAR(mean[c], exact / R, 1e-5) << "column " << c;
  }
}

TEST(QuantizeTensor, DequantizeToBf16IsCodeTimesScaleRounded) {
  Tensor codes = Tensor::empty({4}, DType::kF8E4M3);
  auto* c = static_cast<uint8_t*>(codes.raw_data());
  c[0] = 0x7e;  // 448
  c[1] = 0xfe;  // -448
  c[2] = 0x00;
  c[3] = 0x01;  // the smallest subnormal, 2^-9
  const Tensor y = dequantize_tensor_to_bf16(codes, 0.5f).to(DType::kF32);
  EXPECT_EQ(y.data<float>()[0], 224.0f);
  EXPECT_EQ(y.data<float>()[1], -224.0f);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  EXPECT_EQ(y.data<float>()[3], std::ldexp(1.0f, -10));
  // The f32 product rounds to bf16 (8 significant bits): 448 · (1 + 2^-12) -> 448.
  EXPECT_EQ(dequantize_tensor_to_bf16(codes, 1.0f + std::ldexp(1.0f, -12)).to(DType::kF32).data<float>()[0], 448.0f);
}

TEST(QuantizeTensor, AttentionOutputHeadroomIsOneBinade) { EXPECT_EQ(attention_output_amax(3.0f), 6.0f); }

TEST(QuantizeTensor, RefusesAWrongOffsetLength) {
  EXPECT_ANY_THROW(quantize_tensor(matrix(1, 2, {1, 2}), {1.0f}));
}

}  // namespace
}  // namespace orochi
