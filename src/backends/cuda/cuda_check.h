// CUDA error handling: a failed runtime call inside the backend becomes a Status naming the call
// and the device error, so a lost GPU ends the run with a message instead of a crash.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/status.h"

namespace orochi::cuda {

inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return Status(ErrorCode::kIo, std::string(what) + " failed: " + cudaGetErrorName(err) + " (" +
                                    cudaGetErrorString(err) + ")");
}

}  // namespace orochi::cuda

#define OROCHI_CUDA_RETURN_IF_ERROR(call) OROCHI_RETURN_IF_ERROR(::orochi::cuda::cuda_status((call), #call))
