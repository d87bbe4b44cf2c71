// Shared pieces of the CUDA op tests: a fixture that skips without a GPU and owns an arena and a
// stream, random bf16-representable inputs, output poisoning, and the one-line summaries the device
// log is read from ("[cuda-op] <op> <shape> rel_l2=...").
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device.h"
#include "backends/cuda/device_memory.h"
#include "core/random.h"
#include "core/tensor.h"
#include "support/compare.h"

namespace orochi::cuda_test {

#define ASSERT_STATUS_OK(expr)                           \
  do {                                                   \
    const ::orochi::Status status_ = (expr);             \
    ASSERT_TRUE(status_.is_ok()) << status_.to_string(); \
  } while (0)

// Unwraps an Expected inside a test, failing the test (fatally) on error.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                                          \
  auto OROCHI_CONCAT(expected_, __LINE__) = (expr);                                              \
  ASSERT_TRUE(OROCHI_CONCAT(expected_, __LINE__).has_value())                                    \
      << OROCHI_CONCAT(expected_, __LINE__).status().to_string();                                \
  lhs = std::move(OROCHI_CONCAT(expected_, __LINE__)).value()

// GPU 0 with an arena of `arena_bytes` and a non-blocking stream; skips the test without a GPU.
class GpuTest : public ::testing::Test {
 protected:
  explicit GpuTest(size_t arena_bytes = size_t{1} << 30) : arena_bytes_(arena_bytes) {}

  void SetUp() override {
    auto devices = cuda::list_devices();
    if (!devices) GTEST_SKIP() << devices.status().to_string();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    auto arena = cuda::DeviceArena::create(0, arena_bytes_, "test arena");
    ASSERT_TRUE(arena.has_value()) << arena.status().to_string();
    arena_ = *arena;
  }
  void TearDown() override {
    if (stream_) {
      EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      cudaStreamDestroy(stream_);
    }
  }

  cuda::DeviceArena& arena() { return *arena_; }
  cudaStream_t stream() const { return stream_; }

  size_t arena_bytes_;
  std::shared_ptr<cuda::DeviceArena> arena_;
  cudaStream_t stream_ = nullptr;
};

// Fresh inputs per call: a distinct Philox stream for every draw of the process.
inline uint64_t next_stream() {
  static uint64_t counter = 0;
  return ++counter;
}

// N(0, stddev²) values rounded to bf16 and kept in f32: the exact inputs both backends see.
inline Tensor random_bf16_values(const Shape& shape, float stddev = 1.0f, float mean = 0.0f) {
  Tensor t = normal_tensor(shape, 0x0C0FFEE, next_stream());
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = round_to_bf16(mean + stddev * p[i]);
  return t;
}

// Random f32 values (not rounded): inputs of the f32 ops.
inline Tensor random_f32_values(const Shape& shape, float stddev = 1.0f) {
  Tensor t = normal_tensor(shape, 0x0C0FFEE, next_stream());
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] *= stddev;
  return t;
}

// All-ones bytes: NaN in bf16 and f32, so any element a kernel fails to write shows up.
inline Status poison(const Tensor& device, cudaStream_t stream) {
  return cuda::cuda_status(cudaMemsetAsync(device.raw_data(), 0xFF, device.nbytes(), stream), "poison memset");
}

// Host f32 copy of a device tensor (any float dtype).
inline Tensor to_host_f32(const Tensor& device, cudaStream_t stream) {
  auto host = cuda::download(device, stream);
  OROCHI_CHECK(host.has_value(), host.status().to_string());
  return host->to(DType::kF32);
}

inline int64_t count_nan(const Tensor& host_f32) {
  int64_t n = 0;
  for (int64_t i = 0; i < host_f32.numel(); ++i) n += std::isnan(host_f32.data<float>()[i]) ? 1 : 0;
  return n;
}

// Fraction of elements equal bit for bit (as f32 values) to an emulation of the bf16 rounding order.
inline double fraction_equal(const Tensor& a, const Tensor& b) {
  OROCHI_CHECK(a.numel() == b.numel(), "fraction_equal: ", a.describe(), " vs ", b.describe());
  if (a.numel() == 0) return 1.0;
  int64_t same = 0;
  for (int64_t i = 0; i < a.numel(); ++i) same += a.data<float>()[i] == b.data<float>()[i] ? 1 : 0;
  return static_cast<double>(same) / static_cast<double>(a.numel());
}

// The line the lead reads from the device log.
inline void print_case(const std::string& op, const std::string& shape, const testing::Comparison& c,
                       double equal_fraction = -1.0) {
  std::printf("[cuda-op] %-22s %-28s rel_l2=%.3e max_abs=%.3e", op.c_str(), shape.c_str(), c.rel_l2, c.max_abs);
  if (equal_fraction >= 0) std::printf(" bitwise_vs_bf16_emulation=%.4f%%", 100.0 * equal_fraction);
  std::printf("\n");
  std::fflush(stdout);
}

// The checks every op case makes: every element written (no NaN left from the poison), rel L2 to
// the CPU op within `tol`, and, when given, at least `min_equal` of the elements bit-equal to a host
// emulation of diffusers' bf16 rounding order. Prints the summary line either way.
inline void check_case(const std::string& op, const std::string& shape, const Tensor& got_f32,
                       const Tensor& cpu_ref, double tol, const Tensor* emulated = nullptr,
                       double min_equal = 0.0) {
  ASSERT_EQ(got_f32.shape(), cpu_ref.shape()) << op << " " << shape;
  const testing::Comparison c = testing::compare(got_f32, cpu_ref);
  const double equal = emulated ? fraction_equal(got_f32, *emulated) : -1.0;
  print_case(op, shape, c, equal);
  EXPECT_EQ(count_nan(got_f32), 0) << op << " " << shape << ": elements left unwritten (or NaN produced)";
  EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= tol) << op << " " << shape << ": " << c.summary();
  if (emulated) {
    EXPECT_GE(equal, min_equal) << op << " " << shape << ": bitwise agreement with the bf16 emulation";
  }
}

}  // namespace orochi::cuda_test
