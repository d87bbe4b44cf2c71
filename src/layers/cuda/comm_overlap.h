// A comm stream beside a rank's compute stream, so that collectives overlap the GEMMs and attention
// that do not need them, and the two events that order one after the other. The comm stream is the
// one the rank's groups (dist::Comm) enqueue on: the parallel context's (dist/parallel_context.h),
// lent, not owned.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/status.h"

namespace orochi::layers::gpu {

class StageTimer;

class CommOverlap {
 public:
  // On the current device: `comm` (the context's comm stream of this rank) beside `compute`.
  static Expected<std::unique_ptr<CommOverlap>> create(cudaStream_t compute, cudaStream_t comm);
  ~CommOverlap();
  CommOverlap(const CommOverlap&) = delete;
  CommOverlap& operator=(const CommOverlap&) = delete;

  cudaStream_t stream() const { return comm_; }
  // Orders the comm stream after the compute stream's work so far.
  Status comm_after_compute();
  // And back: the compute stream waits for the collectives enqueued so far. `timer` times the wait
  // (the communication the compute could not hide).
  Status compute_after_comm(StageTimer& timer);

 private:
  CommOverlap() = default;
  cudaStream_t compute_ = nullptr, comm_ = nullptr;
  cudaEvent_t compute_ready_ = nullptr, comm_done_ = nullptr;
};

}  // namespace orochi::layers::gpu
