#include "layers/cuda/comm_overlap.h"

#include "backends/cuda/cuda_check.h"
#include "layers/cuda/stage_timer.h"

namespace orochi::layers::gpu {

Expected<std::unique_ptr<CommOverlap>> CommOverlap::create(cudaStream_t compute, cudaStream_t comm) {
  std::unique_ptr<CommOverlap> o(new CommOverlap());
  o->compute_ = compute;
  o->comm_ = comm;  // created with the highest priority by the context (dist/cuda/gpu_parallel_context.cpp)
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&o->compute_ready_, cudaEventDisableTiming));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&o->comm_done_, cudaEventDisableTiming));
  return o;
}

CommOverlap::~CommOverlap() {
  for (cudaEvent_t e : {compute_ready_, comm_done_})
    if (e) cudaEventDestroy(e);
}

Status CommOverlap::comm_after_compute() {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(compute_ready_, compute_));
  return cuda::cuda_status(cudaStreamWaitEvent(comm_, compute_ready_, 0), "comm stream wait");
}

Status CommOverlap::compute_after_comm(StageTimer& timer) {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(comm_done_, comm_));
  timer.begin("wait for comm");  // the communication the compute stream could not hide
  Status s = cuda::cuda_status(cudaStreamWaitEvent(compute_, comm_done_, 0), "compute stream wait");
  timer.end();
  return s;
}

}  // namespace orochi::layers::gpu
