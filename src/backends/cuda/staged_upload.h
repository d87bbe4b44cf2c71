// Brings many host tensors (typically zero-copy views of a page-cached checkpoint) onto the GPU at
// pinned-memory speed. A plain cudaMemcpy from pageable memory runs at a third of the link's
// rate and one tensor at a time; here host threads copy (and convert) the next piece into one of
// a few pinned staging buffers while the pieces before it travel over PCIe, so reading the page
// cache and the transfer overlap.
//
//   StagedUploader up = ...create(device, stream);
//   up->add(host_view, device_tensor);   // any number; returns once the piece is queued
//   up->finish();                        // every copy landed; the host views may go
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

struct UploadStats {
  uint64_t bytes = 0;        // bytes sent to the GPU (in the device dtype)
  double host_seconds = 0;   // spent copying / converting into the staging buffers
  double wait_seconds = 0;   // spent waiting for a staging buffer to come free
};

class StagedUploader {
 public:
  // `buffers` pinned buffers of `buffer_bytes` each; host copies use up to `threads` threads (0:
  // half the host's hardware threads, at most 16: one thread reads the page cache at ~5 GB/s and
  // PCIe takes ~55 GB/s).
  static Expected<std::unique_ptr<StagedUploader>> create(int device, cudaStream_t stream,
                                                          size_t buffer_bytes = size_t{64} << 20, int buffers = 4,
                                                          int threads = 0);
  ~StagedUploader();
  StagedUploader(const StagedUploader&) = delete;
  StagedUploader& operator=(const StagedUploader&) = delete;

  // Queues host -> device (same shape; float dtypes convert as torch's .to() does, others must
  // match). `device` must be contiguous; `host` may be a strided view. The host tensor must stay
  // alive until finish().
  Status add(const Tensor& host, const Tensor& device);
  // Waits for every queued copy.
  Status finish();
  const UploadStats& stats() const { return stats_; }

 private:
  StagedUploader() = default;
  Status send_piece(const char* src, DType src_dtype, char* dst, DType dst_dtype, size_t elements);

  int device_ = 0, threads_ = 1;
  cudaStream_t stream_ = nullptr;
  size_t buffer_bytes_ = 0;
  std::vector<char*> buffers_;          // pinned
  std::vector<cudaEvent_t> done_;       // per buffer: its last copy finished
  std::vector<bool> in_flight_;
  size_t next_ = 0;
  UploadStats stats_;
};

}  // namespace orochi::cuda
