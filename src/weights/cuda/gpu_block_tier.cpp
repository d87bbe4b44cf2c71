#include "weights/cuda/gpu_block_tier.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device.h"

namespace orochi::weights {

const char* weight_tier_name(WeightTier tier) { return tier == WeightTier::kHost ? "pinned host" : "peer GPU"; }

Expected<std::unique_ptr<GpuBlockTier>> GpuBlockTier::create(int device, WeightTier tier, int peer_device,
                                                             const std::vector<bool>& streamed, size_t image_bytes,
                                                             void* slots_base, int slots, cudaStream_t compute) {
  std::unique_ptr<GpuBlockTier> t(new GpuBlockTier());
  t->device_ = device;
  t->peer_ = peer_device;
  t->tier_ = tier;
  t->image_bytes_ = image_bytes;
  t->slots_ = static_cast<char*>(slots_base);
  t->compute_ = compute;
  for (bool s : streamed) t->index_.push_back(s ? static_cast<int64_t>(t->stored_blocks_++) : -1);
  const size_t bytes = t->tier_bytes();
  if (tier == WeightTier::kPeer) {
    if (peer_device < 0 || peer_device == device)
      return invalid_argument("the peer tier needs another GPU to hold the streamed weights");
    int can = 0;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, device, peer_device));
    if (!can)
      return unsupported("GPU " + std::to_string(device) + " cannot read GPU " + std::to_string(peer_device) +
                         "'s memory (no NVLink or PCIe peer access): use the pinned host tier");
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(peer_device));
    if (cudaMalloc(reinterpret_cast<void**>(&t->storage_), bytes) != cudaSuccess) {
      cudaGetLastError();
      cudaSetDevice(device);
      return invalid_argument("GPU " + std::to_string(peer_device) + " has no room for " + std::to_string(bytes >> 20) +
                              " MiB of streamed weights; use the pinned host tier or fewer streamed blocks");
    }
    OROCHI_RETURN_IF_ERROR(cuda::enable_peer_access(device, peer_device));
  } else if (cudaHostAlloc(reinterpret_cast<void**>(&t->storage_), bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return invalid_argument("could not pin " + std::to_string(bytes >> 20) +
                            " MiB of host memory for the streamed weights; free host RAM or keep more blocks resident");
  }
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&t->copy_, cudaStreamNonBlocking));
  t->copied_.resize(slots);
  t->released_.resize(slots);
  for (int s = 0; s < slots; ++s) {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&t->copied_[s], cudaEventDisableTiming));
    OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&t->released_[s], cudaEventDisableTiming));
  }
  return t;
}

GpuBlockTier::~GpuBlockTier() {
  if (copy_) {
    cudaStreamSynchronize(copy_);
    cudaStreamDestroy(copy_);
  }
  for (cudaEvent_t e : copied_) cudaEventDestroy(e);
  for (cudaEvent_t e : released_) cudaEventDestroy(e);
  if (!storage_) return;
  if (tier_ == WeightTier::kHost) {
    cudaFreeHost(storage_);
  } else {
    cudaSetDevice(peer_);
    cudaFree(storage_);
    cudaSetDevice(device_);
  }
}

const char* GpuBlockTier::image_of(int block) const {
  return storage_ + static_cast<size_t>(index_.at(block)) * image_bytes_;
}

Status GpuBlockTier::store(int64_t block, const void* image, size_t bytes, cudaStream_t stream) {
  if (bytes != image_bytes_ || index_.at(block) < 0)
    return Status(ErrorCode::kInternal, "block " + std::to_string(block) + " does not fit its place in the weight tier");
  char* dst = const_cast<char*>(image_of(static_cast<int>(block)));
  if (tier_ == WeightTier::kHost) {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, image, bytes, cudaMemcpyDeviceToHost, stream));
  } else {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(dst, peer_, image, device_, bytes, stream));
  }
  return cuda::cuda_status(cudaStreamSynchronize(stream), "storing a streamed block");
}

Status GpuBlockTier::start_copy(int block, int slot) {
  if (index_.at(block) < 0) return Status(ErrorCode::kInternal, "block " + std::to_string(block) + " is resident");
  // Not before the compute that last read this slot is done.
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(copy_, released_[slot], 0));
  if (tier_ == WeightTier::kHost) {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(this->slot(slot), image_of(block), image_bytes_, cudaMemcpyHostToDevice, copy_));
  } else {
    OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(this->slot(slot), device_, image_of(block), peer_, image_bytes_, copy_));
  }
  return cuda::cuda_status(cudaEventRecord(copied_[slot], copy_), "recording a weight copy");
}

Status GpuBlockTier::wait_copy(int slot) {
  return cuda::cuda_status(cudaStreamWaitEvent(compute_, copied_[slot], 0), "waiting for a weight copy");
}

Status GpuBlockTier::release_slot(int slot) {
  return cuda::cuda_status(cudaEventRecord(released_[slot], compute_), "releasing a staging slot");
}

}  // namespace orochi::weights
