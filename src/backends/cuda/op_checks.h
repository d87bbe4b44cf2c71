// Shape/dtype/device checks shared by the CUDA op wrappers. A failure is a caller bug, so these
// are invariant checks with file:line; launch failures come back as Status (launch_status).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/tensor.h"

namespace orochi::cuda::detail {

inline std::string describe_on_device(const Tensor& t) {
  return t.defined() ? t.describe() + " on " + device_name(t.device()) : std::string("undefined");
}

// A contiguous CUDA tensor of `dtype`.
inline void require_cuda(const Tensor& t, DType dtype, const char* what) {
  OROCHI_CHECK(t.defined() && t.device().kind == DeviceKind::kCUDA && t.dtype() == dtype && t.is_contiguous(),
               what, " must be a contiguous ", dtype_name(dtype), " CUDA tensor, got ", describe_on_device(t));
}

// A 2-D CUDA view [R, cols] of `dtype` with dense columns and rows spaced by strides()[0] >= cols.
inline void require_row_strided(const Tensor& t, int64_t cols, DType dtype, const char* what) {
  OROCHI_CHECK(t.defined() && t.device().kind == DeviceKind::kCUDA && t.dtype() == dtype && t.ndim() == 2 &&
                   t.dim(1) == cols && t.strides()[1] == 1 && t.strides()[0] >= cols,
               what, " must be a row-strided ", dtype_name(dtype), " CUDA table [R, ", cols, "], got ",
               describe_on_device(t));
}

// A contiguous int64 CUDA vector of n indices.
inline const int64_t* require_indices(const Tensor& idx, int64_t n, const char* what) {
  OROCHI_CHECK(idx.defined() && idx.device().kind == DeviceKind::kCUDA && idx.dtype() == DType::kI64 &&
                   idx.ndim() == 1 && idx.numel() == n && idx.is_contiguous(),
               what, " must be a contiguous i64 CUDA vector of ", n, " indices, got ", describe_on_device(idx));
  return static_cast<const int64_t*>(idx.raw_data());
}

inline void require_same_device(const Tensor& a, const Tensor& b, const char* what) {
  OROCHI_CHECK(a.device() == b.device(), what, ": ", describe_on_device(a), " and ", describe_on_device(b),
               " are on different devices");
}

inline __nv_bfloat16* bf16_data(const Tensor& t) { return static_cast<__nv_bfloat16*>(t.raw_data()); }

inline Status launch_status(cudaError_t err, const char* op) { return cuda_status(err, op); }

// The checked operands of an AdaLN-modulated norm (`what` names the op in messages): the modulation
// rows for x [S, C]. `out_optional`: out may be undefined (an op that then writes only codes).
// Defined in ops_norm.cpp.
kernels::ModulationRows checked_modulation(const Tensor& x, const Tensor& weight, const Tensor& shift,
                                           const Tensor& scale, const Tensor& idx, const Tensor& out,
                                           const std::string& what, bool out_optional = false);

}  // namespace orochi::cuda::detail
