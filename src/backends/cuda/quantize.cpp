#include "backends/cuda/quantize.h"

#include "backends/cuda/kernels/quantize_kernels.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {
namespace {

kernels::QuantCode code_of(DType format) {
  OROCHI_CHECK(format == DType::kF8E4M3 || format == DType::kI8, "quantized codes are f8e4m3 or i8, got ",
               dtype_name(format));
  return format == DType::kI8 ? kernels::QuantCode::kI8 : kernels::QuantCode::kE4M3;
}

kernels::QuantCode code_of(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? kernels::QuantCode::kE4M3 : kernels::QuantCode::kE5M2;
}

uint8_t* bytes(const Tensor& t) { return static_cast<uint8_t*>(t.raw_data()); }

void require_same_shape(const Tensor& in, const Tensor& out, const char* what) {
  OROCHI_CHECK(in.shape() == out.shape(), what, ": ", detail::describe_on_device(in), " into ",
               detail::describe_on_device(out));
  detail::require_same_device(in, out, what);
}

}  // namespace

Status quantize_rows(const Tensor& x, const RowQuantized& q, cudaStream_t stream) {
  OROCHI_CHECK(x.defined() && x.ndim() == 2, "quantize_rows: x must be [R, C], got ", detail::describe_on_device(x));
  const DType format = q.codes.defined() ? q.codes.dtype() : DType::kF32;
  const kernels::QuantCode code = code_of(format);
  const int64_t R = x.dim(0), C = x.dim(1);
  detail::require_cuda(q.codes, format, "quantize_rows codes");
  detail::require_cuda(q.scales, DType::kF32, "quantize_rows scales");
  OROCHI_CHECK(q.codes.shape() == x.shape() && q.scales.ndim() == 1 && q.scales.dim(0) == R, "quantize_rows: x ",
               x.describe(), " into codes ", q.codes.describe(), " and scales ", q.scales.describe());
  detail::require_same_device(x, q.codes, "quantize_rows");
  detail::require_same_device(x, q.scales, "quantize_rows");
  if (x.dtype() == DType::kBF16) {
    detail::require_cuda(x, DType::kBF16, "quantize_rows input");
    return detail::launch_status(kernels::launch_quantize_rows_bf16(detail::bf16_data(x), R, C, code, bytes(q.codes),
                                                                    q.scales.data<float>(), stream),
                                 "quantize_rows kernel");
  }
  detail::require_cuda(x, DType::kF32, "quantize_rows input (bf16 or f32)");
  return detail::launch_status(kernels::launch_quantize_rows_f32(static_cast<const float*>(x.raw_data()), R, C, code,
                                                                 bytes(q.codes), q.scales.data<float>(), stream),
                               "quantize_rows kernel");
}

Expected<RowQuantized> quantize_rows(const Tensor& x, DType format, DeviceArena& arena, cudaStream_t stream) {
  code_of(format);
  OROCHI_CHECK(x.defined() && x.ndim() == 2, "quantize_rows: x must be [R, C], got ", detail::describe_on_device(x));
  RowQuantized q;
  OROCHI_ASSIGN_OR_RETURN(q.codes, arena.tensor(x.shape(), format));
  OROCHI_ASSIGN_OR_RETURN(q.scales, arena.tensor({x.dim(0)}, DType::kF32));
  OROCHI_RETURN_IF_ERROR(quantize_rows(x, q, stream));
  return q;
}

Status encode_fp8(const Tensor& in, Fp8Format format, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(in, DType::kF32, "encode_fp8 input");
  detail::require_cuda(out, DType::kU8, "encode_fp8 output");
  require_same_shape(in, out, "encode_fp8");
  return detail::launch_status(kernels::launch_encode_f32(static_cast<const float*>(in.raw_data()), bytes(out),
                                                          in.numel(), code_of(format), stream),
                               "encode_fp8 kernel");
}

Status decode_fp8(const Tensor& in, Fp8Format format, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(in, DType::kU8, "decode_fp8 input");
  detail::require_cuda(out, DType::kF32, "decode_fp8 output");
  require_same_shape(in, out, "decode_fp8");
  return detail::launch_status(kernels::launch_decode_to_f32(bytes(in), static_cast<float*>(out.raw_data()), in.numel(),
                                                             code_of(format), stream),
                               "decode_fp8 kernel");
}

Status encode_int8(const Tensor& in, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(in, DType::kF32, "encode_int8 input");
  detail::require_cuda(out, DType::kI8, "encode_int8 output");
  require_same_shape(in, out, "encode_int8");
  return detail::launch_status(kernels::launch_encode_f32(static_cast<const float*>(in.raw_data()), bytes(out),
                                                          in.numel(), kernels::QuantCode::kI8, stream),
                               "encode_int8 kernel");
}

}  // namespace orochi::cuda
