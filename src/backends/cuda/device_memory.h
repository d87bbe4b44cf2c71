// Device memory for one GPU: an arena that makes ONE cudaMalloc when it is created and hands out
// 256-byte aligned pieces of it, so nothing calls cudaMalloc inside a step (DESIGN.md, "Memory:
// planned, not discovered"). Per-step scratch is released by returning to a mark; tensors made
// from the arena are CUDA tensors (Buffer device kCUDA) that keep the arena alive.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

class DeviceArena : public std::enable_shared_from_this<DeviceArena> {
 public:
  static constexpr size_t kAlignment = 256;

  // One cudaMalloc of `capacity_bytes` on GPU `device_index`; `name` appears in error messages.
  static Expected<std::shared_ptr<DeviceArena>> create(int device_index, size_t capacity_bytes,
                                                       std::string name = "device arena");
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // The next `bytes` (rounded up to kAlignment); an error naming requested vs free bytes when the
  // arena is exhausted. Never calls cudaMalloc.
  Expected<void*> allocate(size_t bytes);
  // A contiguous CUDA tensor over freshly allocated arena bytes (contents undefined).
  Expected<Tensor> tensor(const Shape& shape, DType dtype);

  // Scratch scopes: everything allocated after mark() is released by reset(that mark). Tensors
  // made from released bytes must not be used afterwards (they still point into the arena).
  size_t mark() const { return used_; }
  void reset(size_t mark);

  void* base() const { return base_; }  // the first byte (a fresh arena allocates from here)
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  size_t available() const { return capacity_ - used_; }
  size_t peak() const { return peak_; }  // the most ever in use at once
  Device device() const { return {DeviceKind::kCUDA, device_index_}; }
  const std::string& name() const { return name_; }

 private:
  DeviceArena() = default;
  char* base_ = nullptr;
  size_t capacity_ = 0, used_ = 0, peak_ = 0;
  int device_index_ = 0;
  std::string name_;
};

// Copies a host tensor into a new arena tensor of dtype `target`. Float types convert on the host
// (round to nearest even, as torch's .to() does); any other dtype copies as is and needs
// target == host.dtype() (index vectors). Waits for the copy to finish.
Expected<Tensor> upload(const Tensor& host, DeviceArena& arena, DType target, cudaStream_t stream = nullptr);
// Copies a host tensor into an existing contiguous device tensor of the same shape, converting the
// dtype as upload() does. Waits for the copy to finish.
Status upload_into(const Tensor& host, const Tensor& device, cudaStream_t stream = nullptr);
// A host copy of a contiguous device tensor (same dtype and shape), after the work queued on
// `stream` before it.
Expected<Tensor> download(const Tensor& device, cudaStream_t stream = nullptr);

}  // namespace orochi::cuda
