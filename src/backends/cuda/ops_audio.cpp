// The audio decoder ops on Tensors: checks, weight relayouts, then the kernels in
// kernels/audio_snake.cu and kernels/audio_conv.cu and the f32 GEMMs.
#include "backends/cuda/ops_audio.h"

#include "backends/cuda/kernels/audio_kernels.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {
namespace {

float* f32_data(const Tensor& t) { return static_cast<float*>(t.raw_data()); }
const float* f32_or_null(const Tensor* t) { return t ? static_cast<const float*>(t->raw_data()) : nullptr; }

// x [B, L, C] f32 CUDA.
void require_signal(const Tensor& x, const char* what) {
  detail::require_cuda(x, DType::kF32, what);
  OROCHI_CHECK(x.ndim() == 3 && x.dim(1) >= 1, what, " must be [B, L, C] with L >= 1, got ", x.describe());
}

void require_vector(const Tensor& v, int64_t n, const char* what) {
  detail::require_cuda(v, DType::kF32, what);
  OROCHI_CHECK(v.numel() == n, what, " ", v.describe(), " must have ", n, " elements");
}

// The first n elements of a scratch tensor, viewed as `shape`.
Tensor scratch_view(const Tensor& scratch, const Shape& shape, const char* what) {
  detail::require_cuda(scratch, DType::kF32, what);
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(scratch.numel() >= n, what, " ", scratch.describe(), " is smaller than the ", n, " elements needed");
  return scratch.view({scratch.numel()}).slice(0, 0, n).view(shape);
}

}  // namespace

Tensor conv1d_weight_for_gemm(const Tensor& w) {
  OROCHI_CHECK(w.defined() && w.device().kind == DeviceKind::kCPU && w.dtype() == DType::kF32 && w.ndim() == 3,
               "conv1d_weight_for_gemm: need a host f32 [Cout, Cin, K], got ", w.describe());
  const Tensor src = w.contiguous();
  const int64_t Cout = w.dim(0), Cin = w.dim(1), K = w.dim(2);
  Tensor out = Tensor::empty({Cout, K * Cin}, DType::kF32);
  const float* s = src.data<float>();
  float* o = out.data<float>();
  for (int64_t co = 0; co < Cout; ++co)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t k = 0; k < K; ++k) o[co * K * Cin + k * Cin + ci] = s[(co * Cin + ci) * K + k];
  return out;
}

Tensor conv_transpose1d_weight_for_gemm(const Tensor& w) {
  OROCHI_CHECK(w.defined() && w.device().kind == DeviceKind::kCPU && w.dtype() == DType::kF32 && w.ndim() == 3,
               "conv_transpose1d_weight_for_gemm: need a host f32 [Cin, Cout, K], got ", w.describe());
  const Tensor src = w.contiguous();
  const int64_t Cin = w.dim(0), Cout = w.dim(1), K = w.dim(2);
  Tensor out = Tensor::empty({K * Cout, Cin}, DType::kF32);
  const float* s = src.data<float>();
  float* o = out.data<float>();
  for (int64_t ci = 0; ci < Cin; ++ci)
    for (int64_t co = 0; co < Cout; ++co)
      for (int64_t k = 0; k < K; ++k) o[(k * Cout + co) * Cin + ci] = s[(ci * Cout + co) * K + k];
  return out;
}

Status audio_alias_free_snake(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta,
                              const Tensor& up_filter, const Tensor& down_filter, const Tensor& out,
                              cudaStream_t stream) {
  require_signal(x, "audio_alias_free_snake input");
  const int64_t B = x.dim(0), L = x.dim(1), C = x.dim(2);
  require_vector(log_alpha, C, "audio_alias_free_snake alpha");
  require_vector(log_beta, C, "audio_alias_free_snake beta");
  require_vector(up_filter, kernels::kAudioFilterTaps, "audio_alias_free_snake up filter");
  require_vector(down_filter, kernels::kAudioFilterTaps, "audio_alias_free_snake down filter");
  detail::require_cuda(out, DType::kF32, "audio_alias_free_snake output");
  OROCHI_CHECK(out.shape() == x.shape() && out.raw_data() != x.raw_data(), "audio_alias_free_snake: output ",
               out.describe(), " must be a distinct tensor of the input's shape ", x.describe());
  detail::require_same_device(x, out, "audio_alias_free_snake");
  return detail::launch_status(
      kernels::launch_audio_alias_free_snake(f32_data(x), f32_data(log_alpha), f32_data(log_beta), f32_data(up_filter),
                                             f32_data(down_filter), f32_data(out), B, L, C, stream),
      "audio_alias_free_snake kernel");
}

Status audio_im2col(const Tensor& x, int64_t kernel, int64_t dilation, int64_t padding, const Tensor& col,
                    cudaStream_t stream) {
  require_signal(x, "audio_im2col input");
  OROCHI_CHECK(kernel >= 1 && dilation >= 1 && padding >= 0, "audio_im2col: bad kernel ", kernel, ", dilation ",
               dilation, ", padding ", padding);
  const int64_t B = x.dim(0), L = x.dim(1), C = x.dim(2);
  const int64_t Lout = L + 2 * padding - dilation * (kernel - 1);
  OROCHI_CHECK(Lout >= 1, "audio_im2col: the kernel spans more than the padded input ", x.describe());
  detail::require_cuda(col, DType::kF32, "audio_im2col output");
  OROCHI_CHECK(col.shape() == (Shape{B, Lout, kernel * C}), "audio_im2col: output ", col.describe(), ", expected ",
               shape_to_string({B, Lout, kernel * C}));
  detail::require_same_device(x, col, "audio_im2col");
  return detail::launch_status(
      kernels::launch_audio_im2col(f32_data(x), f32_data(col), B, L, C, kernel, dilation, padding, stream),
      "audio_im2col kernel");
}

Status audio_conv1d(GemmRunner& gemm, const Tensor& x, const Tensor& w_gemm, const Tensor* bias, int64_t dilation,
                    int64_t padding, const Tensor& scratch, const Tensor& out, cudaStream_t stream) {
  require_signal(x, "audio_conv1d input");
  detail::require_cuda(w_gemm, DType::kF32, "audio_conv1d weight");
  const int64_t B = x.dim(0), L = x.dim(1), Cin = x.dim(2);
  OROCHI_CHECK(w_gemm.ndim() == 2 && w_gemm.dim(1) % Cin == 0, "audio_conv1d: weight ", w_gemm.describe(),
               " is not [Cout, K·", Cin, "]");
  const int64_t Cout = w_gemm.dim(0), K = w_gemm.dim(1) / Cin;
  const int64_t Lout = L + 2 * padding - dilation * (K - 1);
  detail::require_cuda(out, DType::kF32, "audio_conv1d output");
  OROCHI_CHECK(out.shape() == (Shape{B, Lout, Cout}), "audio_conv1d: output ", out.describe(), ", expected ",
               shape_to_string({B, Lout, Cout}));
  if (bias) require_vector(*bias, Cout, "audio_conv1d bias");
  if (K == 1 && padding == 0) return gemm.linear(x, w_gemm, bias, out, stream);
  const Tensor col = scratch_view(scratch, {B, Lout, K * Cin}, "audio_conv1d scratch");
  OROCHI_RETURN_IF_ERROR(audio_im2col(x, K, dilation, padding, col, stream));
  return gemm.linear(col, w_gemm, bias, out, stream);
}

Status audio_conv_transpose1d(GemmRunner& gemm, const Tensor& x, const Tensor& w_gemm, const Tensor* bias,
                              int64_t kernel, int64_t stride, int64_t padding, const Tensor& scratch,
                              const Tensor& out, cudaStream_t stream) {
  require_signal(x, "audio_conv_transpose1d input");
  detail::require_cuda(w_gemm, DType::kF32, "audio_conv_transpose1d weight");
  const int64_t B = x.dim(0), Lin = x.dim(1), Cin = x.dim(2);
  OROCHI_CHECK(kernel >= 1 && stride >= 1 && padding >= 0 && w_gemm.ndim() == 2 && w_gemm.dim(1) == Cin &&
                   w_gemm.dim(0) % kernel == 0,
               "audio_conv_transpose1d: weight ", w_gemm.describe(), " is not [", kernel, "·Cout, ", Cin, "]");
  const int64_t Cout = w_gemm.dim(0) / kernel;
  const int64_t Lout = (Lin - 1) * stride - 2 * padding + kernel;
  OROCHI_CHECK(Lout >= 1, "audio_conv_transpose1d: padding ", padding, " crops the whole output");
  detail::require_cuda(out, DType::kF32, "audio_conv_transpose1d output");
  OROCHI_CHECK(out.shape() == (Shape{B, Lout, Cout}), "audio_conv_transpose1d: output ", out.describe(),
               ", expected ", shape_to_string({B, Lout, Cout}));
  if (bias) require_vector(*bias, Cout, "audio_conv_transpose1d bias");
  const Tensor z = scratch_view(scratch, {B, Lin, kernel * Cout}, "audio_conv_transpose1d scratch");
  OROCHI_RETURN_IF_ERROR(gemm.linear(x, w_gemm, nullptr, z, stream));  // [B, Lin, K·Cout]
  return detail::launch_status(
      kernels::launch_audio_conv_transpose_gather(f32_data(z), f32_or_null(bias), f32_data(out), B, Lin, Cout, kernel,
                                                  stride, padding, Lout, stream),
      "audio_conv_transpose1d gather kernel");
}

Status audio_conv1d_mono_clamp(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t padding, float lo,
                               float hi, const Tensor& out, cudaStream_t stream) {
  require_signal(x, "audio_conv1d_mono_clamp input");
  detail::require_cuda(w, DType::kF32, "audio_conv1d_mono_clamp weight");
  const int64_t B = x.dim(0), L = x.dim(1), Cin = x.dim(2);
  OROCHI_CHECK(w.ndim() == 3 && w.dim(0) == 1 && w.dim(1) == Cin && padding >= 0 && lo <= hi,
               "audio_conv1d_mono_clamp: weight ", w.describe(), " is not [1, ", Cin, ", K] (or bad padding/range)");
  const int64_t K = w.dim(2), Lout = L + 2 * padding - K + 1;
  OROCHI_CHECK(Lout >= 1, "audio_conv1d_mono_clamp: the kernel spans more than the padded input");
  detail::require_cuda(out, DType::kF32, "audio_conv1d_mono_clamp output");
  OROCHI_CHECK(out.shape() == (Shape{B, Lout}), "audio_conv1d_mono_clamp: output ", out.describe(), ", expected ",
               shape_to_string({B, Lout}));
  if (bias) require_vector(*bias, 1, "audio_conv1d_mono_clamp bias");
  return detail::launch_status(kernels::launch_audio_conv1d_mono_clamp(f32_data(x), f32_data(w), f32_or_null(bias),
                                                                       f32_data(out), B, L, Cin, K, padding, lo, hi,
                                                                       stream),
                               "audio_conv1d_mono_clamp kernel");
}

Status audio_residual_sum(const Tensor& out, const Tensor& acc, const Tensor& a, const Tensor& b, float divisor,
                          cudaStream_t stream) {
  detail::require_cuda(out, DType::kF32, "audio_residual_sum output");
  detail::require_cuda(a, DType::kF32, "audio_residual_sum a");
  detail::require_cuda(b, DType::kF32, "audio_residual_sum b");
  const int64_t n = out.numel();
  OROCHI_CHECK(a.numel() == n && b.numel() == n, "audio_residual_sum: ", a.describe(), " + ", b.describe(), " into ",
               out.describe());
  if (acc.defined()) {
    detail::require_cuda(acc, DType::kF32, "audio_residual_sum acc");
    OROCHI_CHECK(acc.numel() == n, "audio_residual_sum: accumulator ", acc.describe(), " for ", out.describe());
  }
  OROCHI_CHECK(divisor != 0.0f, "audio_residual_sum: zero divisor");
  return detail::launch_status(
      kernels::launch_audio_residual_sum(f32_data(out), acc.defined() ? f32_data(acc) : nullptr, f32_data(a),
                                         f32_data(b), divisor, n, stream),
      "audio_residual_sum kernel");
}

}  // namespace orochi::cuda
