// Checks, then the kernels of kernels/quantized_output_kernels.h.
#include "backends/cuda/ops_quantized_output.h"

#include <string>

#include "backends/cuda/kernels/quantized_output_kernels.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {
namespace {

using detail::bf16_data;

// q checked as the per-token quantization of the op's output [S, C] (on x's device).
kernels::RowCodes checked_codes(const RowQuantized& q, int64_t S, int64_t C, const Tensor& x, const std::string& what) {
  const DType format = q.codes.defined() ? q.codes.dtype() : DType::kF32;
  OROCHI_CHECK(format == DType::kF8E4M3 || format == DType::kI8, what, ": codes are f8e4m3 or i8, got ",
               detail::describe_on_device(q.codes));
  detail::require_cuda(q.codes, format, (what + " codes").c_str());
  detail::require_cuda(q.scales, DType::kF32, (what + " scales").c_str());
  OROCHI_CHECK(q.codes.shape() == (Shape{S, C}) && q.scales.ndim() == 1 && q.scales.dim(0) == S, what, ": codes ",
               q.codes.describe(), " and scales ", q.scales.describe(), " for an output [", S, ", ", C, "]");
  detail::require_same_device(x, q.codes, what.c_str());
  detail::require_same_device(x, q.scales, what.c_str());
  return {format == DType::kI8 ? kernels::QuantCode::kI8 : kernels::QuantCode::kE4M3,
          static_cast<uint8_t*>(q.codes.raw_data()), q.scales.data<float>()};
}

// The kernels read their input again after writing `out`.
void require_no_alias(const Tensor& in, const Tensor& out, const std::string& what) {
  OROCHI_CHECK(!out.defined() || out.raw_data() != in.raw_data(), what, ": the output must not be the input (",
               in.describe(), ")");
}

kernels::bf16* optional_bf16(const Tensor& t) { return t.defined() ? bf16_data(t) : nullptr; }

}  // namespace

Status rms_norm_modulate_quantized(const Tensor& x, const Tensor& weight, float eps, const Tensor& shift,
                                   const Tensor& scale, const Tensor& idx, const Tensor& out, const RowQuantized& q,
                                   cudaStream_t stream) {
  const std::string what = "rms_norm_modulate_quantized";
  const kernels::ModulationRows mod = detail::checked_modulation(x, weight, shift, scale, idx, out, what, true);
  const int64_t S = x.dim(0), C = x.dim(1);
  const kernels::RowCodes codes = checked_codes(q, S, C, x, what);
  require_no_alias(x, out, what);
  return detail::launch_status(kernels::launch_rms_norm_quantized(bf16_data(x), bf16_data(weight), optional_bf16(out),
                                                                  codes, S, C, eps, &mod, stream),
                               (what + " kernel").c_str());
}

Status gated_residual_rms_norm_modulate_quantized(const Tensor& h, const Tensor& gate, const Tensor& y,
                                                  const Tensor& weight, float eps, const Tensor& shift,
                                                  const Tensor& scale, const Tensor& idx, const Tensor& out,
                                                  const RowQuantized& q, cudaStream_t stream) {
  const std::string what = "gated_residual_rms_norm_modulate_quantized";
  const kernels::ModulationRows mod = detail::checked_modulation(h, weight, shift, scale, idx, out, what, true);
  const int64_t S = h.dim(0), C = h.dim(1);
  detail::require_cuda(y, DType::kBF16, (what + " update").c_str());
  OROCHI_CHECK(y.shape() == h.shape(), what, ": state ", h.describe(), " vs update ", y.describe());
  detail::require_row_strided(gate, C, DType::kBF16, (what + " gate").c_str());
  OROCHI_CHECK(gate.dim(0) == shift.dim(0), what, ": gate ", gate.describe(), " and shift ", shift.describe(),
               " differ in rows");
  detail::require_same_device(h, y, what.c_str());
  const kernels::RowCodes codes = checked_codes(q, S, C, h, what);
  require_no_alias(h, out, what);
  return detail::launch_status(
      kernels::launch_gated_residual_rms_norm_quantized(bf16_data(h), bf16_data(gate), gate.strides()[0], mod.idx,
                                                        bf16_data(y), bf16_data(weight), optional_bf16(out), codes, S,
                                                        C, eps, &mod, stream),
      (what + " kernel").c_str());
}

Status swiglu_quantized(const Tensor& u, const Tensor& out, const RowQuantized& q, cudaStream_t stream) {
  const std::string what = "swiglu_quantized";
  detail::require_cuda(u, DType::kBF16, (what + " input").c_str());
  OROCHI_CHECK(u.ndim() == 2 && u.dim(1) % 2 == 0, what, " input must be [M, 2I], got ", u.describe());
  const int64_t M = u.dim(0), I = u.dim(1) / 2;
  if (out.defined()) {
    detail::require_cuda(out, DType::kBF16, (what + " output").c_str());
    OROCHI_CHECK(out.shape() == (Shape{M, I}), what, ": input ", u.describe(), " needs output [", M, ", ", I,
                 "], got ", out.describe());
    detail::require_same_device(u, out, what.c_str());
  }
  const kernels::RowCodes codes = checked_codes(q, M, I, u, what);
  require_no_alias(u, out, what);
  return detail::launch_status(kernels::launch_swiglu_quantized(bf16_data(u), optional_bf16(out), codes, M, I, stream),
                               (what + " kernel").c_str());
}

}  // namespace orochi::cuda
