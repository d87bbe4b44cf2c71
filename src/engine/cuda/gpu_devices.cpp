// The CUDA backend's view of the devices: memory (cudaMemGetInfo) and the GPU-to-GPU link.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device.h"
#include "engine/cuda/cuda_backend.h"

namespace orochi::engine::cuda_backend {

Expected<double> gpu_link_gbps(int first, int count) {
  constexpr size_t kBytes = size_t{256} << 20;
  double slowest = 0;
  for (int peer = first + 1; peer < first + count; ++peer) {
    void *src = nullptr, *dst = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    auto release = [&] {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
      if (src) cudaSetDevice(first), cudaFree(src);
      if (dst) cudaSetDevice(peer), cudaFree(dst);
      cudaSetDevice(first);
    };
    // Direct peer access where the pair has it (NVLink, PCIe P2P), as the run's exchanges will use;
    // without it the copy is staged through host RAM, and that is the link's speed.
    int can = 0;
    Status s = cuda::cuda_status(cudaDeviceCanAccessPeer(&can, first, peer), "cudaDeviceCanAccessPeer");
    if (s.is_ok() && can) s = cuda::enable_peer_access(first, peer);
    if (s.is_ok()) s = cuda::cuda_status(cudaSetDevice(peer), "cudaSetDevice");
    if (s.is_ok()) s = cuda::cuda_status(cudaMalloc(&dst, kBytes), "measuring the GPU link (cudaMalloc)");
    if (s.is_ok()) s = cuda::cuda_status(cudaSetDevice(first), "cudaSetDevice");
    if (s.is_ok()) s = cuda::cuda_status(cudaMalloc(&src, kBytes), "measuring the GPU link (cudaMalloc)");
    if (s.is_ok()) s = cuda::cuda_status(cudaEventCreate(&start), "cudaEventCreate");
    if (s.is_ok()) s = cuda::cuda_status(cudaEventCreate(&stop), "cudaEventCreate");
    float ms = 0;
    for (int rep = 0; rep < 2 && s.is_ok(); ++rep) {  // the first enables the path, the second is timed
      s = cuda::cuda_status(cudaEventRecord(start, nullptr), "cudaEventRecord");
      if (s.is_ok()) s = cuda::cuda_status(cudaMemcpyPeerAsync(dst, peer, src, first, kBytes, nullptr), "cudaMemcpyPeerAsync");
      if (s.is_ok()) s = cuda::cuda_status(cudaEventRecord(stop, nullptr), "cudaEventRecord");
      if (s.is_ok()) s = cuda::cuda_status(cudaEventSynchronize(stop), "measuring the GPU link");
      if (s.is_ok()) s = cuda::cuda_status(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    }
    release();
    if (!s.is_ok()) return s;
    const double gbps = static_cast<double>(kBytes) / (static_cast<double>(ms) * 1e-3) / 1e9;
    slowest = peer == first + 1 ? gbps : std::min(slowest, gbps);
  }
  return slowest;
}

int gpu_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

Expected<uint64_t> gpu_memory_total(int device) {
  size_t free = 0, total = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total));
  return static_cast<uint64_t>(total);
}

uint64_t gpu_memory_used(int device) {
  size_t free = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return static_cast<uint64_t>(total - free);
}

nlohmann::json gpu_memory_report(int device) {
  size_t free = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess)
    return nlohmann::json{{"device", device}, {"error", "cudaMemGetInfo failed"}};
  return nlohmann::json{{"device", device}, {"used_bytes", total - free}, {"total_bytes", total}};
}

}  // namespace orochi::engine::cuda_backend
