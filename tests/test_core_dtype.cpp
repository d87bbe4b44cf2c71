#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.h"
#include "core/tensor.h"

namespace orochi {
namespace {

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even mantissa (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-2.5f)), -2.5f);
}

TEST(DType, F16RoundTripsEveryHalf) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float f = f16_to_f32(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << "bits " << bits;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds up to inf, as IEEE does
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
}

TEST(DType, F8E4M3RoundTripsEveryByte) {
  for (uint32_t bits = 0; bits < 256; ++bits) {
    const uint8_t b = static_cast<uint8_t>(bits);
    const float f = f8e4m3_to_f32(b);
    if (std::isnan(f)) continue;
    if (f == 0.0f && (b & 0x80)) continue;  // -0 maps to 0x80, fine either way
    ASSERT_EQ(f32_to_f8e4m3(f), b) << "bits " << bits;
  }
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f32_to_f8e4m3(1000.0f), 0x7e);  // saturates
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0x7f)));
}

TEST(DType, SafetensorsNames) {
  EXPECT_EQ(dtype_from_safetensors_name("BF16"), DType::kBF16);
  EXPECT_EQ(dtype_from_safetensors_name("F8_E4M3"), DType::kF8E4M3);
  EXPECT_EQ(dtype_from_safetensors_name("F8_E5M2"), DType::kF8E5M2);
  EXPECT_EQ(dtype_safetensors_name(DType::kF8E5M2), std::string("F8_E5M2"));
  EXPECT_TRUE(dtype_is_float(DType::kF8E5M2));
  EXPECT_EQ(dtype_size(DType::kF8E5M2), 1u);
  // e5m2 codes read as core/fp8 defines them (57344 is its largest finite value), times the scale.
  const Tensor codes = Tensor::from_floats({57344.0f, -1.5f, 0.0f}, {3}).to(DType::kF8E5M2);
  const Tensor back = codes.to(DType::kF32);
  EXPECT_EQ(back.data<float>()[0], 57344.0f);
  EXPECT_EQ(back.data<float>()[1], -1.5f);
  EXPECT_FALSE(dtype_from_safetensors_name("bf16").has_value());
  EXPECT_FALSE(dtype_from_safetensors_name("Q4_K").has_value());
}

TEST(Tensor, ViewSliceContiguous) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  Tensor t = Tensor::from_floats(v, {2, 3, 4});
  Tensor s = t.slice(2, 1, 3);  // [2,3,2], strided
  EXPECT_FALSE(s.is_contiguous());
  Tensor c = s.contiguous();
  ASSERT_EQ(c.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(c.data<float>()[0], 1.0f);
  EXPECT_EQ(c.data<float>()[1], 2.0f);
  EXPECT_EQ(c.data<float>()[2], 5.0f);
  EXPECT_EQ(c.data<float>()[11], 22.0f);
  Tensor r = t.slice(0, 1, 2).view({-1, 4});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(r.data<float>()[0], 12.0f);
  EXPECT_THROW(s.view({12}), InternalError);
}

TEST(Tensor, ConvertsThroughBf16AndFp8WithScale) {
  Tensor t = Tensor::from_floats({1.0f, -3.0f, 0.5f, 100.0f}, {4});  // 100/0.5 = 200 -> e4m3 192
  Tensor b = t.to(DType::kBF16).to(DType::kF32);
  EXPECT_EQ(b.data<float>()[1], -3.0f);
  Tensor q = Tensor::empty({4}, DType::kF8E4M3);
  q.set_scale(0.5f);
  convert_from_f32(DType::kF8E4M3, t.data<float>(), q.raw_data(), 4, q.scale());
  Tensor back = q.to(DType::kF32);
  EXPECT_EQ(back.data<float>()[0], 1.0f);
  EXPECT_EQ(back.data<float>()[3], 96.0f);  // 200 rounds to 192 = 1.5 * 2^7 (3 mantissa bits)
  EXPECT_THROW(t.data<uint16_t>(), InternalError);
}

TEST(Tensor, HostCopiesRefuseDeviceTensors) {
  // A device buffer must never be read through host copies: clone/to/contiguous check first.
  float fake[4] = {};
  auto buffer = Buffer::wrap(fake, sizeof fake, nullptr, Device{DeviceKind::kCUDA, 0});
  Tensor t = Tensor::from_buffer(buffer, 0, {2, 2}, DType::kF32);
  EXPECT_THROW(t.clone(), InternalError);
  EXPECT_THROW(t.to(DType::kBF16), InternalError);
  EXPECT_THROW(t.slice(1, 0, 1).contiguous(), InternalError);
  EXPECT_NO_THROW(t.view({4}));
}

}  // namespace
}  // namespace orochi
