#include "backends/cuda/device_memory.h"

#include <cstdio>

#include "backends/cuda/cuda_check.h"

namespace orochi::cuda {
namespace {

std::string mib(size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.1f MiB)", bytes, bytes / 1048576.0);
  return text;
}

// Runs `body` with `device` current and puts the caller's device back: the arena may live on a GPU
// other than the calling thread's current one.
template <typename Body>
Status on_device(int device, Body body) {
  int previous = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
  if (previous != device) OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  Status status = body();
  if (previous != device) {
    const Status restore = cuda_status(cudaSetDevice(previous), "cudaSetDevice (restore)");
    if (status.is_ok()) status = restore;
  }
  return status;
}

}  // namespace

Expected<std::shared_ptr<DeviceArena>> DeviceArena::create(int device_index, size_t capacity_bytes,
                                                           std::string name) {
  std::shared_ptr<DeviceArena> arena(new DeviceArena());
  arena->device_index_ = device_index;
  arena->name_ = std::move(name);
  arena->capacity_ = (capacity_bytes + kAlignment - 1) / kAlignment * kAlignment;
  OROCHI_RETURN_IF_ERROR(on_device(device_index, [&]() -> Status {
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, arena->capacity_);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the error so later calls do not report it again
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      return io_error(arena->name_ + ": cudaMalloc of " + mib(arena->capacity_) + " on cuda:" +
                      std::to_string(device_index) + " failed (" + cudaGetErrorName(err) + "); the GPU has " +
                      mib(free_b) + " free of " + mib(total_b) +
                      ": plan a smaller arena or free the GPU (nvidia-smi shows other processes)");
    }
    arena->base_ = static_cast<char*>(p);
    return Status::ok();
  }));
  return arena;
}

DeviceArena::~DeviceArena() {
  if (base_ == nullptr) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device_index_);
  cudaFree(base_);
  cudaSetDevice(previous);
}

Expected<void*> DeviceArena::allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes || rounded > available())
    return invalid_argument(name_ + " on cuda:" + std::to_string(device_index_) + " is exhausted: requested " +
                            mib(bytes) + ", " + mib(available()) + " free of " + mib(capacity_) +
                            " (peak so far " + mib(peak_) +
                            "): plan a larger arena, or a shorter sequence / fewer frames");
  void* p = base_ + used_;
  used_ += rounded;
  if (used_ > peak_) peak_ = used_;
  return p;
}

Expected<Tensor> DeviceArena::tensor(const Shape& shape, DType dtype) {
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(n >= 0, "bad shape ", shape_to_string(shape));
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
  OROCHI_ASSIGN_OR_RETURN(void* p, allocate(bytes));
  auto buffer = Buffer::wrap(p, bytes, shared_from_this(), device());
  return Tensor::from_buffer(std::move(buffer), 0, shape, dtype);
}

void DeviceArena::reset(size_t mark) {
  OROCHI_CHECK(mark <= used_ && mark % kAlignment == 0, name_, ": reset to mark ", mark, " with ", used_,
               " bytes in use");
  used_ = mark;
}

namespace {

void require_device_tensor(const Tensor& t, const char* what) {
  OROCHI_CHECK(t.defined() && t.device().kind == DeviceKind::kCUDA && t.is_contiguous(), what,
               " must be a contiguous CUDA tensor, got ",
               t.defined() ? t.describe() + " on " + device_name(t.device()) : "undefined");
}

}  // namespace

Status upload_into(const Tensor& host, const Tensor& device, cudaStream_t stream) {
  OROCHI_CHECK(host.defined() && host.device().kind == DeviceKind::kCPU, "upload source must be a host tensor");
  require_device_tensor(device, "upload destination");
  OROCHI_CHECK(host.shape() == device.shape(), "upload: ", host.describe(), " into ", device.describe());
  const bool same = host.dtype() == device.dtype();
  OROCHI_CHECK(same || (dtype_is_float(host.dtype()) && dtype_is_float(device.dtype())), "upload: cannot convert ",
               dtype_name(host.dtype()), " to ", dtype_name(device.dtype()));
  // to() makes a contiguous host copy in the device's dtype; a contiguous same-dtype tensor is copied as is.
  const Tensor staged = same ? host.contiguous() : host.to(device.dtype());
  OROCHI_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device.raw_data(), staged.raw_data(), staged.nbytes(), cudaMemcpyHostToDevice, stream));
  // The staging copy dies with this function, so the transfer must be done before we return.
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return Status::ok();
}

Expected<Tensor> upload(const Tensor& host, DeviceArena& arena, DType target, cudaStream_t stream) {
  OROCHI_ASSIGN_OR_RETURN(Tensor device, arena.tensor(host.shape(), target));
  OROCHI_RETURN_IF_ERROR(upload_into(host, device, stream));
  return device;
}

Expected<Tensor> download(const Tensor& device, cudaStream_t stream) {
  require_device_tensor(device, "download source");
  Tensor host = Tensor::uninitialized(device.shape(), device.dtype());  // the copy writes every byte
  OROCHI_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host.raw_data(), device.raw_data(), device.nbytes(), cudaMemcpyDeviceToHost, stream));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return host;
}

}  // namespace orochi::cuda
