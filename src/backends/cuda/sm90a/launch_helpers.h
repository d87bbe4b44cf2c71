// Host-side launch helpers of the sm_90a kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

namespace orochi::cuda::sm90a {

// Opts `kKernel` in to `bytes` of dynamic shared memory on the current device, once per device:
// the attribute is per device, and a process may launch on several GPUs.
template <auto kKernel>
cudaError_t opt_in_shared_memory(int bytes) {
  static std::atomic<uint64_t> done{0};
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((done.load() & bit) != 0) return cudaSuccess;
  if (cudaError_t e = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
      e != cudaSuccess)
    return e;
  done.fetch_or(bit);
  return cudaSuccess;
}

}  // namespace orochi::cuda::sm90a
