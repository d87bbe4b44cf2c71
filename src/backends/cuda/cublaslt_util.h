// What the cuBLASLt GEMM runners (gemm.cpp: bf16/f16/f32; gemm_quantized.cpp: fp8/int8) share:
// statuses, attribute setters, pointer alignment, and the one way a shape's algorithm is tuned
// (each of the heuristic's candidates timed on the real operands, the fastest kept).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "core/status.h"

namespace orochi::cuda {

Status cublas_status(cublasStatus_t s, const char* what);

#define OROCHI_CUBLAS_RETURN_IF_ERROR(call) OROCHI_RETURN_IF_ERROR(::orochi::cuda::cublas_status((call), #call))

// A runner's cuBLASLt handle and its one cudaMalloc of `workspace_bytes`, made on GPU `device` (the
// current device restored). Whatever was made is stored in *handle / *workspace even on failure,
// for the runner's destructor to free; a failed cudaMalloc's error names `what` and ends in `advice`.
Status create_handle_and_workspace(int device, size_t workspace_bytes, const char* what, const char* advice,
                                   cublasLtHandle_t* handle, void** workspace);

// The alignment of `p` in bytes, capped at 256 (null counts as 256): cuBLASLt picks kernels by it.
uint32_t alignment_of(const void* p);

template <typename T>
cublasStatus_t set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value);
}
template <typename T>
cublasStatus_t set_layout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const T& value) {
  return cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof value);
}
template <typename T>
cublasStatus_t set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  return cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value);
}

// The index of the fastest of `count` heuristic results: each whose workspace fits
// `workspace_bytes` is run by `run` (which enqueues one matmul with that algorithm on `stream` and
// says whether cuBLASLt accepted it) once to warm up and three times timed. A candidate that fails
// is skipped; the first is kept when none can be timed. Clears a failed launch's sticky error.
Expected<int> fastest_candidate(const cublasLtMatmulHeuristicResult_t* results, int count, size_t workspace_bytes,
                                cudaStream_t stream,
                                const std::function<bool(const cublasLtMatmulHeuristicResult_t&)>& run);

}  // namespace orochi::cuda
