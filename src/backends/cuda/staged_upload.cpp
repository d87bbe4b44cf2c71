#include "backends/cuda/staged_upload.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/stopwatch.h"
#include "backends/cuda/cuda_check.h"
#include "core/check.h"
#include "core/dtype.h"

namespace orochi::cuda {
namespace {


// Converts `n` elements through f32 in small blocks (no allocation per piece beyond the block).
void convert_elements(const char* src, DType from, char* dst, DType to, size_t n) {
  constexpr size_t kBlock = 4096;
  float tmp[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    convert_to_f32(from, src + i * dtype_size(from), tmp, m);
    convert_from_f32(to, tmp, dst + i * dtype_size(to), m);
  }
}

}  // namespace

Expected<std::unique_ptr<StagedUploader>> StagedUploader::create(int device, cudaStream_t stream, size_t buffer_bytes,
                                                                 int buffers, int threads) {
  if (buffer_bytes < 4096 || buffers < 1 || threads < 0)
    return invalid_argument("the staged uploader needs buffers of at least 4 KiB and one buffer");
  if (threads == 0) threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 1, 16);
  std::unique_ptr<StagedUploader> u(new StagedUploader());
  u->device_ = device;
  u->stream_ = stream;
  u->threads_ = threads;
  u->buffer_bytes_ = buffer_bytes / 256 * 256;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  for (int b = 0; b < buffers; ++b) {
    char* p = nullptr;
    if (cudaHostAlloc(reinterpret_cast<void**>(&p), u->buffer_bytes_, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return invalid_argument("could not pin " + std::to_string(u->buffer_bytes_ >> 20) +
                              " MiB of host memory for uploading weights; free host RAM");
    }
    u->buffers_.push_back(p);
    cudaEvent_t e = nullptr;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    u->done_.push_back(e);
    u->in_flight_.push_back(false);
  }
  return u;
}

StagedUploader::~StagedUploader() {
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (in_flight_[b]) cudaEventSynchronize(done_[b]);  // never free a buffer a copy still reads
    cudaEventDestroy(done_[b]);
    cudaFreeHost(buffers_[b]);
  }
}

Status StagedUploader::send_piece(const char* src, DType src_dtype, char* dst, DType dst_dtype, size_t elements) {
  const size_t b = next_++ % buffers_.size();
  if (in_flight_[b]) {
    const auto t0 = Clock::now();
    OROCHI_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(done_[b]));
    stats_.wait_seconds += seconds_since(t0);
  }
  const auto t0 = Clock::now();
  char* staging = buffers_[b];
  const size_t dst_size = dtype_size(dst_dtype), src_size = dtype_size(src_dtype);
  // Page-cache reads fault page by page: several threads on disjoint ranges keep the link busy.
  const size_t per_thread = std::max<size_t>(size_t{1} << 16, (elements + threads_ - 1) / threads_);
  const int64_t parts = static_cast<int64_t>((elements + per_thread - 1) / per_thread);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t p = 0; p < parts; ++p) {
    const size_t begin = static_cast<size_t>(p) * per_thread, n = std::min(per_thread, elements - begin);
    if (src_dtype == dst_dtype) std::memcpy(staging + begin * dst_size, src + begin * src_size, n * dst_size);
    else convert_elements(src + begin * src_size, src_dtype, staging + begin * dst_size, dst_dtype, n);
  }
  stats_.host_seconds += seconds_since(t0);
  OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, staging, elements * dst_size, cudaMemcpyHostToDevice, stream_));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(done_[b], stream_));
  in_flight_[b] = true;
  stats_.bytes += elements * dst_size;
  return Status::ok();
}

Status StagedUploader::add(const Tensor& host, const Tensor& device) {
  OROCHI_CHECK(host.defined() && host.device().kind == DeviceKind::kCPU, "upload source must be a host tensor");
  OROCHI_CHECK(device.defined() && device.device().kind == DeviceKind::kCUDA && device.is_contiguous(),
               "upload destination must be a contiguous CUDA tensor");
  OROCHI_CHECK(host.shape() == device.shape(), "upload: ", host.describe(), " into ", device.describe());
  const bool same = host.dtype() == device.dtype();
  OROCHI_CHECK(same || (dtype_is_float(host.dtype()) && dtype_is_float(device.dtype())), "upload: cannot convert ",
               dtype_name(host.dtype()), " to ", dtype_name(device.dtype()));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // A strided view is made contiguous first; it is read into the staging buffers before add() returns.
  const Tensor src = host.contiguous();
  const size_t elements = static_cast<size_t>(src.numel());
  const size_t per_piece = buffer_bytes_ / std::max(dtype_size(device.dtype()), size_t{1});
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(const_cast<void*>(device.raw_data()));
  for (size_t done = 0; done < elements; done += per_piece) {
    const size_t n = std::min(per_piece, elements - done);
    OROCHI_RETURN_IF_ERROR(send_piece(from + done * dtype_size(src.dtype()), src.dtype(),
                                      to + done * dtype_size(device.dtype()), device.dtype(), n));
  }
  return Status::ok();
}

Status StagedUploader::finish() {
  const auto t0 = Clock::now();
  OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  stats_.wait_seconds += seconds_since(t0);
  std::fill(in_flight_.begin(), in_flight_.end(), false);
  return Status::ok();
}

}  // namespace orochi::cuda
