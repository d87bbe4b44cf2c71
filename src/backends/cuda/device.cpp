#include "backends/cuda/device.h"

#include "backends/cuda/cuda_check.h"

namespace orochi::cuda {

Expected<std::vector<DeviceInfo>> list_devices() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    return not_found(std::string("no CUDA GPU is visible (") +
                     (err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)) +
                     "): check the driver with nvidia-smi and CUDA_VISIBLE_DEVICES");
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, i));
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(i));
    size_t free_b = 0, total_b = 0;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_b, &total_b));
    out.push_back({i, prop.name, prop.major, prop.minor, prop.multiProcessorCount, total_b, free_b});
  }
  return out;
}

Status enable_peer_access(int device, int peer) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the (non-sticky) error so a later check does not see it
    return Status::ok();
  }
  return cuda_status(e, "cudaDeviceEnablePeerAccess");
}

}  // namespace orochi::cuda
