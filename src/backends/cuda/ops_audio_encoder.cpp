// The audio encoder ops on Tensors: checks, then the kernels in kernels/audio_encoder.cu and the f32
// GEMMs.
#include "backends/cuda/ops_audio_encoder.h"

#include <algorithm>

#include "backends/cuda/kernels/audio_encoder_kernels.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {
namespace {

float* f32_data(const Tensor& t) { return static_cast<float*>(t.raw_data()); }

void require_vector(const Tensor& v, int64_t n, const char* what) {
  detail::require_cuda(v, DType::kF32, what);
  OROCHI_CHECK(v.numel() == n, what, " ", v.describe(), " must have ", n, " elements");
}

}  // namespace

Status audio_snake(const Tensor& x, const Tensor& alpha, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(x, DType::kF32, "audio_snake input");
  detail::require_cuda(out, DType::kF32, "audio_snake output");
  OROCHI_CHECK(x.ndim() == 3 && out.shape() == x.shape(), "audio_snake: input ", x.describe(), " output ",
               out.describe());
  require_vector(alpha, x.dim(2), "audio_snake alpha");
  detail::require_same_device(x, out, "audio_snake");
  return detail::launch_status(
      kernels::launch_audio_snake(f32_data(x), f32_data(alpha), f32_data(out), x.numel(), x.dim(2), stream),
      "audio_snake kernel");
}

Status audio_conv1d_any(GemmRunner& gemm, const Tensor& x, const Tensor& w_gemm, const Tensor* bias, int64_t stride,
                        int64_t dilation, int64_t padding, const Tensor& scratch, const Tensor& out,
                        cudaStream_t stream) {
  detail::require_cuda(x, DType::kF32, "audio_conv1d_any input");
  detail::require_cuda(w_gemm, DType::kF32, "audio_conv1d_any weight");
  OROCHI_CHECK(x.ndim() == 3 && x.dim(1) >= 1, "audio_conv1d_any: input ", x.describe(), " is not [B, L, C]");
  OROCHI_CHECK(stride >= 1 && dilation >= 1 && padding >= 0, "audio_conv1d_any: bad stride ", stride, ", dilation ",
               dilation, ", padding ", padding);
  const int64_t B = x.dim(0), L = x.dim(1), Cin = x.dim(2);
  OROCHI_CHECK(w_gemm.ndim() == 2 && w_gemm.dim(1) % Cin == 0, "audio_conv1d_any: weight ", w_gemm.describe(),
               " is not [Cout, K·", Cin, "]");
  const int64_t Cout = w_gemm.dim(0), K = w_gemm.dim(1) / Cin;
  const int64_t reach = dilation * (K - 1) + 1;
  OROCHI_CHECK(L + 2 * padding >= reach, "audio_conv1d_any: input length ", L, " is shorter than the kernel's reach ",
               reach);
  const int64_t Lout = (L + 2 * padding - reach) / stride + 1;
  detail::require_cuda(out, DType::kF32, "audio_conv1d_any output");
  OROCHI_CHECK(out.shape() == (Shape{B, Lout, Cout}), "audio_conv1d_any: output ", out.describe(), ", expected ",
               shape_to_string({B, Lout, Cout}));
  if (bias) require_vector(*bias, Cout, "audio_conv1d_any bias");
  detail::require_same_device(x, out, "audio_conv1d_any");
  if (K == 1 && stride == 1 && padding == 0) return gemm.linear(x, w_gemm, bias, out, stream);

  detail::require_cuda(scratch, DType::kF32, "audio_conv1d_any scratch");
  const int64_t width = K * Cin;
  OROCHI_CHECK(scratch.numel() >= width, "audio_conv1d_any scratch ", scratch.describe(),
               " holds less than one row of ", width);
  const int64_t chunk = std::min(Lout, scratch.numel() / width);  // output steps per im2col piece
  const Tensor flat_scratch = scratch.view({scratch.numel()});
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t0 = 0; t0 < Lout; t0 += chunk) {
      const int64_t rows = std::min(chunk, Lout - t0);
      const Tensor col = flat_scratch.slice(0, 0, rows * width).view({rows, width});
      OROCHI_RETURN_IF_ERROR(
          detail::launch_status(kernels::launch_audio_im2col_rows(f32_data(x), f32_data(col), L, Cin, b, t0, rows, K,
                                                                  stride, dilation, padding, stream),
                                "audio_conv1d_any im2col kernel"));
      const Tensor y = out.slice(0, b, b + 1).view({Lout, Cout}).slice(0, t0, t0 + rows);  // contiguous rows
      OROCHI_RETURN_IF_ERROR(gemm.linear(col, w_gemm, bias, y, stream));
    }
  }
  return Status::ok();
}

Status audio_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out,
                        cudaStream_t stream) {
  detail::require_cuda(x, DType::kF32, "audio_layer_norm input");
  detail::require_cuda(out, DType::kF32, "audio_layer_norm output");
  OROCHI_CHECK(x.ndim() >= 1 && out.shape() == x.shape(), "audio_layer_norm: input ", x.describe(), " output ",
               out.describe());
  const int64_t C = x.dim(-1), rows = C > 0 ? x.numel() / C : 0;
  require_vector(weight, C, "audio_layer_norm weight");
  require_vector(bias, C, "audio_layer_norm bias");
  return detail::launch_status(kernels::launch_audio_layer_norm(f32_data(x), f32_data(weight), f32_data(bias),
                                                                f32_data(out), rows, C, eps, stream),
                               "audio_layer_norm kernel");
}

Status audio_causal_attention_pool(const Tensor& qkv, int64_t heads, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(qkv, DType::kF32, "audio_causal_attention_pool qkv");
  detail::require_cuda(out, DType::kF32, "audio_causal_attention_pool output");
  OROCHI_CHECK(qkv.ndim() == 3 && heads >= 1 && qkv.dim(2) % (3 * heads) == 0 && qkv.dim(2) > 0,
               "audio_causal_attention_pool: qkv ", qkv.describe(), " is not [B, A, 3·", heads, "·D]");
  const int64_t B = qkv.dim(0), A = qkv.dim(1), D = qkv.dim(2) / (3 * heads);
  OROCHI_CHECK(out.ndim() == 3 && out.dim(0) == B && out.dim(1) == A && out.dim(2) >= 1,
               "audio_causal_attention_pool: output ", out.describe(), " for qkv ", qkv.describe());
  OROCHI_CHECK(A <= kernels::kAudioAttentionMaxSteps && A + D <= 12288 && B <= 65535,
               "audio_causal_attention_pool: ", A, " steps of head dim ", D, " exceed the kernel's shared memory");
  detail::require_same_device(qkv, out, "audio_causal_attention_pool");
  return detail::launch_status(
      kernels::launch_audio_causal_attention_pool(f32_data(qkv), f32_data(out), B, A, heads, D, out.dim(2), stream),
      "audio_causal_attention_pool kernel");
}

Status audio_gelu_tanh_mul(const Tensor& gate, const Tensor& up, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(gate, DType::kF32, "audio_gelu_tanh_mul gate");
  detail::require_cuda(up, DType::kF32, "audio_gelu_tanh_mul up");
  detail::require_cuda(out, DType::kF32, "audio_gelu_tanh_mul output");
  OROCHI_CHECK(up.shape() == gate.shape() && out.shape() == gate.shape(), "audio_gelu_tanh_mul: gate ", gate.describe(),
               " up ", up.describe(), " out ", out.describe());
  return detail::launch_status(
      kernels::launch_audio_gelu_tanh_mul(f32_data(gate), f32_data(up), f32_data(out), gate.numel(), stream),
      "audio_gelu_tanh_mul kernel");
}

}  // namespace orochi::cuda
