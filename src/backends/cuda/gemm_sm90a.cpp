#include "backends/cuda/gemm_sm90a.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/sm90a/gemm_launch.h"
#include "backends/cuda/tensor_maps.h"

namespace orochi::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

std::string gemm_sm90a_unsupported_reason(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                                          GemmSm90aEpilogue epilogue) {
  for (const Tensor* t : {&x, &w, &y})
    if (t->dtype() != DType::kBF16 || t->device().kind != DeviceKind::kCUDA) return "operands other than CUDA bf16";
  if (w.ndim() != 2 || x.dim(-1) != w.dim(1) || y.ndim() != 2) return "mismatched shapes";
  const int64_t K = w.dim(1), N = w.dim(0), M = x.numel() / K;
  const int64_t out = epilogue == GemmSm90aEpilogue::kSwiGLU ? N / 2 : N;
  if (K % 8 != 0 || N % 16 != 0) return "K not a multiple of 8 or N not a multiple of 16";
  if (!x.is_contiguous() || w.strides()[0] != K || w.strides()[1] != 1 || y.strides()[1] != 1 || y.dim(0) != M ||
      y.dim(1) != out || y.strides()[0] % 8 != 0)
    return "strided operands";
  if (!aligned16(x.raw_data()) || !aligned16(w.raw_data()) || !aligned16(y.raw_data()))
    return "operands not 16-byte aligned";
  if (bias != nullptr && (bias->dtype() != DType::kBF16 || bias->numel() != N || !bias->is_contiguous()))
    return "a bias other than bf16 [N]";
  if (M > (int64_t{1} << 31) - 1 || N > (int64_t{1} << 31) - 1 || K > (int64_t{1} << 31) - 1) return "a shape too large";
  if (!device_is_hopper()) return "a GPU that is not compute capability 9.0";
  return "";
}

Status gemm_sm90a(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, GemmSm90aEpilogue epilogue,
                  cudaStream_t stream) {
  if (const std::string why = gemm_sm90a_unsupported_reason(x, w, bias, y, epilogue); !why.empty())
    return Status(ErrorCode::kUnsupported, "Orochi's sm_90a GEMM cannot take " + x.describe() + " x " + w.describe() +
                                               ": " + why + "; use cuBLASLt (GemmRunner)");
  const int64_t K = w.dim(1), N = w.dim(0), M = x.numel() / K;
  sm90a::GemmLaunch l;
  OROCHI_RETURN_IF_ERROR(bf16_rows_map(l.x, x.raw_data(), M, K, 128));
  OROCHI_RETURN_IF_ERROR(bf16_rows_map(l.w, w.raw_data(), N, K, 64));
  l.bias = bias != nullptr ? bias->raw_data() : nullptr;
  l.y = const_cast<void*>(y.raw_data());
  l.y_stride = y.strides()[0];
  l.M = static_cast<int>(M);
  l.N = static_cast<int>(N);
  l.K = static_cast<int>(K);
  l.epilogue = epilogue == GemmSm90aEpilogue::kSwiGLU ? sm90a::GemmEpilogue::kSwiGLU : sm90a::GemmEpilogue::kBias;
  OROCHI_ASSIGN_OR_RETURN(l.sm_count, multiprocessor_count());
  return cuda_status(sm90a::launch_gemm(l, stream), "sm_90a GEMM launch");
}

}  // namespace orochi::cuda
