#include "backends/cuda/cublaslt_util.h"

#include <algorithm>
#include <bit>
#include <string>

#include "backends/cuda/cuda_check.h"

namespace orochi::cuda {

Status cublas_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status(ErrorCode::kIo, std::string(what) + " failed: " + cublasLtGetStatusName(s) + " (" +
                                    cublasLtGetStatusString(s) + ")");
}

Status create_handle_and_workspace(int device, size_t workspace_bytes, const char* what, const char* advice,
                                   cublasLtHandle_t* handle, void** workspace) {
  int previous = 0;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  const cudaError_t malloc_err = workspace_bytes ? cudaMalloc(workspace, workspace_bytes) : cudaSuccess;
  const cublasStatus_t create_status = cublasLtCreate(handle);
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(previous));
  if (malloc_err != cudaSuccess) {
    cudaGetLastError();
    return io_error(std::string(what) + ": cudaMalloc of " + std::to_string(workspace_bytes) + " bytes on cuda:" +
                    std::to_string(device) + " failed (" + cudaGetErrorName(malloc_err) + "): " + advice);
  }
  return cublas_status(create_status, "cublasLtCreate");
}

uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (address == 0) return 256;
  return static_cast<uint32_t>(std::min<uintptr_t>(uintptr_t{1} << std::countr_zero(address), 256));
}

Expected<int> fastest_candidate(const cublasLtMatmulHeuristicResult_t* results, int count, size_t workspace_bytes,
                                cudaStream_t stream,
                                const std::function<bool(const cublasLtMatmulHeuristicResult_t&)>& run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  int best = 0;
  float best_ms = 0;
  bool timed = false;
  for (int i = 0; i < count; ++i) {
    if (results[i].workspaceSize > workspace_bytes) continue;
    float total_ms = 0;
    bool ok = true;
    for (int rep = 0; rep < 4 && ok; ++rep) {  // one warm-up, three timed
      ok = cudaEventRecord(start, stream) == cudaSuccess && run(results[i]) &&
           cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess;
      float ms = 0;
      if (ok && rep > 0 && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess) total_ms += ms;
    }
    if (ok && (!timed || total_ms < best_ms)) {
      best = i;
      best_ms = total_ms;
      timed = true;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGetLastError();  // a candidate that failed to launch must not poison later checks
  return best;
}

}  // namespace orochi::cuda
