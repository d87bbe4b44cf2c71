#include <cuda_bf16.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/random_fill.h"

namespace orochi::cuda {
namespace {

// Same rounds, constants and Box-Muller mapping as core/random.cpp.
__device__ inline void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint32_t lo0 = 0xD2511F53u * c[0], hi0 = __umulhi(0xD2511F53u, c[0]);
    const uint32_t lo1 = 0xCD9E8D57u * c[2], hi1 = __umulhi(0xCD9E8D57u, c[2]);
    const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

__device__ inline float to_unit(uint32_t x) { return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f); }

template <typename T>
__global__ void fill_normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t stream_id, float mean, float stddev) {
  // One thread per pair of elements: a Philox block yields the two Box-Muller normals.
  for (int64_t pair = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; pair * 2 < n;
       pair += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t c[4] = {static_cast<uint32_t>(pair), static_cast<uint32_t>(pair >> 32),
                     static_cast<uint32_t>(stream_id), static_cast<uint32_t>(stream_id >> 32)};
    philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    const float radius = sqrtf(-2.0f * logf(to_unit(c[0])));
    const float angle = 6.28318530717958647692f * to_unit(c[1]);
    const float z0 = radius * cosf(angle), z1 = radius * sinf(angle);
    out[pair * 2] = static_cast<T>(mean + stddev * z0);
    if (pair * 2 + 1 < n) out[pair * 2 + 1] = static_cast<T>(mean + stddev * z1);
  }
}

}  // namespace

Status fill_normal(const Tensor& t, uint64_t seed, uint64_t stream_id, float mean, float stddev, cudaStream_t stream) {
  OROCHI_CHECK(t.device().kind == DeviceKind::kCUDA && t.is_contiguous(), "fill_normal needs a contiguous CUDA tensor");
  const int64_t n = t.numel();
  if (n == 0) return Status::ok();
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n / 2 + threads) / threads, 132 * 16));
  if (t.dtype() == DType::kF32) {
    fill_normal_kernel<float><<<blocks, threads, 0, stream>>>(static_cast<float*>(t.raw_data()), n, seed, stream_id, mean, stddev);
  } else {
    OROCHI_CHECK(t.dtype() == DType::kBF16, "fill_normal supports f32 and bf16, got ", t.describe());
    fill_normal_kernel<__nv_bfloat16><<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(t.raw_data()), n,
                                                                       seed, stream_id, mean, stddev);
  }
  return cuda_status(cudaGetLastError(), "fill_normal launch");
}

}  // namespace orochi::cuda
