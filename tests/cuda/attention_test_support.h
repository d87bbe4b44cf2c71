// Shared by the attention tests (cuDNN's and Orochi's own kernel): device buffers, bf16 uploads,
// random inputs, a double-precision spot check for long sequences, and the timing setup.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/attention_cudnn.h"
#include "cuda/call_timing.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "support/random.h"

namespace orochi::attention_test {

using cuda::AttentionShape;
using cuda_timing::CallTimes;
using cuda_timing::time_calls;

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call
#define ASSERT_OK(expr)                          \
  do {                                           \
    const Status st_ = (expr);                   \
    ASSERT_TRUE(st_.is_ok()) << st_.to_string(); \
  } while (0)


struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    if (cudaMalloc(&ptr, n) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// bf16 copy of an f32 host tensor on the device.
inline std::unique_ptr<DeviceBuffer> upload_bf16(const Tensor& f32) {
  const Tensor bf16 = f32.to(DType::kBF16);
  auto buf = std::make_unique<DeviceBuffer>(bf16.nbytes());
  if (buf->ptr) cudaMemcpy(buf->ptr, bf16.raw_data(), bf16.nbytes(), cudaMemcpyHostToDevice);
  return buf;
}

// Device bf16 [shape] -> host f32.
inline Tensor download_f32(const DeviceBuffer& buf, const Shape& shape) {
  Tensor bf16 = Tensor::empty(shape, DType::kBF16);
  cudaMemcpy(bf16.raw_data(), buf.ptr, bf16.nbytes(), cudaMemcpyDeviceToHost);
  return bf16.to(DType::kF32);
}

// x [S, H, D] f32 -> [S, heads.size(), D]: heads are independent, so the CPU reference can skip some.
inline Tensor select_heads(const Tensor& x, const std::vector<int64_t>& heads) {
  const int64_t S = x.dim(0), H = x.dim(1), D = x.dim(2), n = static_cast<int64_t>(heads.size());
  Tensor out = Tensor::empty({S, n, D}, DType::kF32);
  const float* src = x.data<float>();
  float* dst = out.data<float>();
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(src + (s * H + heads[i]) * D, D, dst + (s * n + i) * D);
  return out;
}

struct Inputs {
  Tensor q, k, v;  // f32 holding bf16-representable values: [S_q, H, D], [S_kv, H, D] x2
};

inline Inputs make_inputs(const AttentionShape& s, uint64_t seed) {
  // q and k at std 1.5 give scores of std ~2.25 after the 1/sqrt(D) scale: a peaked softmax that
  // a wrong scale or layout would visibly break. Rounded to bf16 so both sides see the same input.
  Inputs in;
  in.q = testing::random_normal({s.s_q, s.heads, s.head_dim}, seed, 1.5f).to(DType::kBF16).to(DType::kF32);
  in.k = testing::random_normal({s.s_kv, s.heads, s.head_dim}, seed + 1, 1.5f).to(DType::kBF16).to(DType::kF32);
  in.v = testing::random_normal({s.s_kv, s.heads, s.head_dim}, seed + 2, 1.0f).to(DType::kBF16).to(DType::kF32);
  return in;
}

// Non-finite values in t: rows or heads a kernel left unwritten (NaN poison) or overflowed.
inline int64_t count_nonfinite(const Tensor& t) {
  const float* all = t.data<float>();
  return std::count_if(all, all + t.numel(), [](float x) { return !std::isfinite(x); });
}

// The heads a CPU comparison covers: every one of few, a spread of many (the CPU reference is
// O(S^2) per head).
inline std::vector<int64_t> heads_to_check(int64_t heads) {
  if (heads > 4) return {0, 1, heads / 2, heads - 1};
  std::vector<int64_t> all;
  for (int64_t h = 0; h < heads; ++h) all.push_back(h);
  return all;
}

// cpu::attention of those heads of the inputs: [S_q, heads.size(), D].
inline Tensor cpu_reference(const Inputs& in, const std::vector<int64_t>& heads) {
  return cpu::attention(select_heads(in.q, heads), select_heads(in.k, heads), select_heads(in.v, heads));
}

// Fills a device bf16 buffer with normal noise without generating gigabytes on the host: one random
// tile, then doubling device-to-device copies (timing on zeros would flatter the kernels).
inline bool fill_random(DeviceBuffer& buf, uint64_t seed) {
  const int64_t tile = std::min<int64_t>(int64_t{1} << 20, static_cast<int64_t>(buf.bytes / 2));
  const Tensor noise = testing::random_normal({tile}, seed).to(DType::kBF16);
  if (cudaMemcpy(buf.ptr, noise.raw_data(), noise.nbytes(), cudaMemcpyHostToDevice) != cudaSuccess) return false;
  char* base = static_cast<char*>(buf.ptr);
  for (size_t done = noise.nbytes(); done < buf.bytes; done *= 2)
    if (cudaMemcpy(base + done, base, std::min(done, buf.bytes - done), cudaMemcpyDeviceToDevice) != cudaSuccess)
      return false;
  return true;
}

inline std::vector<uint16_t> download_bits(const DeviceBuffer& buf) {
  std::vector<uint16_t> host(buf.bytes / 2);
  cudaMemcpy(host.data(), buf.ptr, buf.bytes, cudaMemcpyDeviceToHost);
  return host;
}

// At long sequences the CPU reference is too slow for every row: recompute a few (row, head)
// outputs in double from the bf16 inputs and return the relative L2 error of the GPU's.
inline double spot_check(const std::vector<uint16_t>& q, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                  const std::vector<uint16_t>& o, int64_t S, int64_t H, int64_t D) {
  double err = 0, ref = 0;
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t row : {int64_t{0}, int64_t{1}, S / 2, S - 2, S - 1}) {
    for (int64_t head : {int64_t{0}, H - 1}) {
      const uint16_t* qi = &q[static_cast<size_t>((row * H + head) * D)];
      double max_score = -1e300, denom = 0;
      for (int64_t j = 0; j < S; ++j) {
        const uint16_t* kj = &k[static_cast<size_t>((j * H + head) * D)];
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(bf16_to_f32(qi[d])) * bf16_to_f32(kj[d]);
        p[j] = dot / std::sqrt(double(D));
        max_score = std::max(max_score, p[j]);
      }
      for (double& x : p) {
        x = std::exp(x - max_score);
        denom += x;
      }
      for (int64_t d = 0; d < D; ++d) {
        double expected = 0;
        for (int64_t j = 0; j < S; ++j) expected += p[j] * bf16_to_f32(v[static_cast<size_t>((j * H + head) * D + d)]);
        expected /= denom;
        const double actual = bf16_to_f32(o[static_cast<size_t>((row * H + head) * D + d)]);
        err += (actual - expected) * (actual - expected);
        ref += expected * expected;
      }
    }
  }
  return std::sqrt(err / std::max(ref, 1e-300));
}

// The timing tests' setup: per (S, heads) shape at D = 128, bf16 q, k, v of random values and an
// output buffer on the device, a non-blocking stream, and the shape's FLOPs (QK^T and PV).
struct TimedShape {
  int64_t S, heads;
};
template <typename Body>  // Body(const TimedShape&, cudaStream_t, q, k, v, o, double flop)
void for_each_timed_shape(std::initializer_list<TimedShape> shapes, Body body) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const TimedShape& c : shapes) {
    const int64_t D = 128;
    const size_t bytes = static_cast<size_t>(c.S * c.heads * D) * 2;
    DeviceBuffer q(bytes), k(bytes), v(bytes), o(bytes);
    ASSERT_TRUE(q.ptr && k.ptr && v.ptr && o.ptr);
    ASSERT_TRUE(fill_random(q, 1) && fill_random(k, 2) && fill_random(v, 3));
    body(c, stream, q, k, v, o, 4.0 * static_cast<double>(c.S) * static_cast<double>(c.S) * static_cast<double>(c.heads * D));
    if (::testing::Test::HasFatalFailure()) break;
  }
  cudaStreamDestroy(stream);
}

}  // namespace orochi::attention_test
