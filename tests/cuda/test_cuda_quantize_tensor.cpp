// The per-tensor quantize kernels of cuDNN's FP8 attention (backends/cuda/kernels/
// quantize_tensor_kernels.h) vs their CPU twin (core/quantize_tensor.h), bit for bit: K's column
// means (several row tiles, the last partial), the amax and e4m3 codes with and without the column
// offset (outliers that saturate nothing, a channel bias), the dequantize to bf16 of every finite
// code, and the attention's fixed scales.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "backends/cuda/kernels/quantize_tensor_kernels.h"
#include "core/fp8.h"
#include "core/quantize.h"
#include "core/quantize_tensor.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

class CudaQuantizeTensor : public GpuTest {
 protected:
  CudaQuantizeTensor() : GpuTest(size_t{1} << 30) {}

  template <typename T>
  std::vector<T> read(const void* device, size_t count) {
    std::vector<T> host(count);
    EXPECT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  void* bytes(size_t n) {
    Expected<void*> p = arena().allocate(n);
    EXPECT_TRUE(p.has_value()) << p.status().to_string();
    return p.has_value() ? *p : nullptr;
  }
};

// x [R, C]: keys of 2 heads x 128 with a per-channel bias of up to ±6 (DiT keys' shared channel
// offset) over N(0, 1.5²) noise, bf16-representable.
Tensor biased_keys(int64_t R, int64_t C) {
  Tensor x = random_bf16_values({R, C}, 1.5f);
  float* p = x.data<float>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) p[r * C + c] = round_to_bf16(p[r * C + c] + 6.0f * std::sin(0.37f * c));
  return x;
}

TEST_F(CudaQuantizeTensor, ColumnMeansAmaxAndCodesMatchTheCpuBitForBit) {
  for (const int64_t R : {int64_t{1}, int64_t{777}, int64_t{1300}}) {
    const int64_t C = 256;
    const Tensor x = biased_keys(R, C);
    ASSERT_OK_AND_ASSIGN(Tensor xd, cuda::upload(x, arena(), DType::kBF16, stream()));
    const auto* xb = static_cast<const __nv_bfloat16*>(xd.raw_data());
    const int64_t tiles = (R + kColumnMeanTileRows - 1) / kColumnMeanTileRows;
    auto* partial = static_cast<float*>(bytes(static_cast<size_t>(tiles * C) * 4));
    auto* mean = static_cast<float*>(bytes(static_cast<size_t>(C) * 4));
    auto* scalars = static_cast<float*>(bytes(256));
    auto* codes = static_cast<uint8_t*>(bytes(static_cast<size_t>(R * C)));
    ASSERT_EQ(cuda::kernels::launch_column_means_bf16(xb, R, C, kColumnMeanTileRows, partial, mean, stream()), cudaSuccess);
    const std::vector<float> cpu_mean = column_means(x.to(DType::kBF16));
    const std::vector<float> gpu_mean = read<float>(mean, static_cast<size_t>(C));
    int64_t mean_diffs = 0;
    for (int64_t c = 0; c < C; ++c) mean_diffs += std::memcmp(&cpu_mean[c], &gpu_mean[c], 4) != 0;
    EXPECT_EQ(mean_diffs, 0) << "R=" << R;

    for (const bool smooth : {false, true}) {
      const float* offset = smooth ? mean : nullptr;
      ASSERT_EQ(cuda::kernels::launch_tensor_amax_bf16(xb, R, C, offset, scalars, stream()), cudaSuccess);
      ASSERT_EQ(cuda::kernels::launch_encode_tensor_e4m3_bf16(xb, R, C, offset, scalars, codes, scalars + 1, stream()),
                cudaSuccess);
      const TensorQuantized cpu = quantize_tensor(x.to(DType::kBF16), smooth ? cpu_mean : std::vector<float>{});
      const std::vector<float> s = read<float>(scalars, 2);
      const std::vector<uint8_t> gpu_codes = read<uint8_t>(codes, static_cast<size_t>(R * C));
      EXPECT_EQ(s[0], cpu.amax) << "R=" << R << " smooth=" << smooth;
      EXPECT_EQ(s[1], cpu.scale.scale) << "R=" << R << " smooth=" << smooth;
      const auto* cpu_codes = static_cast<const uint8_t*>(cpu.codes.raw_data());
      int64_t diffs = 0;
      for (int64_t i = 0; i < R * C; ++i) diffs += gpu_codes[i] != cpu_codes[i];
      EXPECT_EQ(diffs, 0) << "R=" << R << " smooth=" << smooth;
      std::printf("[cuda-op] quantize_tensor R=%ld C=%ld smooth=%d amax %.4f, %ld codes differ\n",
                  static_cast<long>(R), static_cast<long>(C), smooth, s[0], static_cast<long>(diffs));
    }
  }
}

TEST_F(CudaQuantizeTensor, DequantizeToBf16MatchesTheCpuForEveryFiniteCode) {
  // Every code but the two NaNs, eight times, at a scale with a full f32 mantissa.
  std::vector<uint8_t> host;
  for (int rep = 0; rep < 8; ++rep)
    for (int c = 0; c < 256; ++c)
      if ((c & 0x7f) != 0x7f) host.push_back(static_cast<uint8_t>(c));
  while (host.size() % 8) host.push_back(0);
  const int64_t n = static_cast<int64_t>(host.size());
  auto* codes = static_cast<uint8_t*>(bytes(host.size()));
  auto* y = static_cast<__nv_bfloat16*>(bytes(host.size() * 2));
  auto* scale = static_cast<float*>(bytes(4));
  const float s = 0.0123456789f;
  ASSERT_EQ(cudaMemcpy(codes, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(scale, &s, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::kernels::launch_decode_tensor_e4m3_to_bf16(codes, n, scale, y, stream()), cudaSuccess);
  const std::vector<uint16_t> gpu = read<uint16_t>(y, host.size());
  Tensor cpu_codes = Tensor::empty({n}, DType::kF8E4M3);
  std::memcpy(cpu_codes.raw_data(), host.data(), host.size());
  const Tensor cpu = dequantize_tensor_to_bf16(cpu_codes, s);
  const auto* expected = static_cast<const uint16_t*>(cpu.raw_data());
  int64_t diffs = 0;
  for (int64_t i = 0; i < n; ++i) diffs += gpu[i] != expected[i];
  EXPECT_EQ(diffs, 0);
}

TEST_F(CudaQuantizeTensor, AttentionScalesAreTheCoreRule) {
  auto* scalars = static_cast<float*>(bytes(256));
  const float v_amax = 5.4321f;
  ASSERT_EQ(cudaMemcpy(scalars, &v_amax, 4, cudaMemcpyHostToDevice), cudaSuccess);
  for (const bool fp8_output : {true, false}) {
    ASSERT_EQ(cuda::kernels::launch_attention_fp8_scales(scalars, fp8_output, scalars + 1, scalars + 2, scalars + 3,
                                                   scalars + 4, stream()),
              cudaSuccess);
    const std::vector<float> s = read<float>(scalars, 5);
    const RowScale p = row_scale(kAttentionPAmax, DType::kF8E4M3);
    const RowScale o = row_scale(attention_output_amax(v_amax), DType::kF8E4M3);
    EXPECT_EQ(s[1], p.scale);
    EXPECT_EQ(s[2], p.inverse);
    EXPECT_EQ(s[3], fp8_output ? o.inverse : 1.0f);
    EXPECT_EQ(s[4], fp8_output ? o.scale : 1.0f);
  }
}

TEST_F(CudaQuantizeTensor, RefusesWidthsAndPointersItCannotVectorize) {
  auto* buf = static_cast<char*>(bytes(4096));
  const auto* x = reinterpret_cast<const __nv_bfloat16*>(buf);
  auto* f = reinterpret_cast<float*>(buf + 2048);
  EXPECT_EQ(cuda::kernels::launch_tensor_amax_bf16(x, 4, 12, nullptr, f, stream()), cudaErrorInvalidValue);  // C % 8
  EXPECT_EQ(cuda::kernels::launch_tensor_amax_bf16(x + 1, 4, 16, nullptr, f, stream()), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::kernels::launch_decode_tensor_e4m3_to_bf16(reinterpret_cast<const uint8_t*>(buf), 12, f,
                                                       reinterpret_cast<__nv_bfloat16*>(buf + 1024), stream()),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace orochi
