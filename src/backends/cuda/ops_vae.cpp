// The video VAE ops on Tensors: checks, then the kernels in kernels/vae_norm.cu and
// kernels/vae_elementwise.cu.
#include "backends/cuda/ops_vae.h"

#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {
namespace {

using kernels::f16;

f16* f16_data(const Tensor& t) { return static_cast<f16*>(t.raw_data()); }
float* f32_data(const Tensor& t) { return static_cast<float*>(t.raw_data()); }

// x [S, C] of `dtype`: returns {S, C}.
std::pair<int64_t, int64_t> rows_of(const Tensor& x, DType dtype, const char* what) {
  detail::require_cuda(x, dtype, what);
  OROCHI_CHECK(x.ndim() == 2, what, " must be [S, C], got ", x.describe());
  return {x.dim(0), x.dim(1)};
}

void require_vector(const Tensor& v, int64_t n, const char* what) {
  detail::require_cuda(v, DType::kF32, what);
  OROCHI_CHECK(v.numel() == n, what, " ", v.describe(), " must have ", n, " elements");
}

}  // namespace

Status vae_rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, cudaStream_t stream) {
  const auto [S, C] = rows_of(x, DType::kF32, "vae_rms_norm input");
  require_vector(weight, C, "vae_rms_norm weight");
  detail::require_cuda(out, DType::kF16, "vae_rms_norm output");
  OROCHI_CHECK(out.shape() == x.shape(), "vae_rms_norm: output ", out.describe(), " for input ", x.describe());
  detail::require_same_device(x, out, "vae_rms_norm");
  return detail::launch_status(
      kernels::launch_vae_rms_norm(f32_data(x), f32_data(weight), f16_data(out), S, C, eps, stream),
      "vae_rms_norm kernel");
}

Status vae_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out,
                      cudaStream_t stream) {
  const auto [S, C] = rows_of(x, DType::kF32, "vae_layer_norm input");
  require_vector(weight, C, "vae_layer_norm weight");
  require_vector(bias, C, "vae_layer_norm bias");
  detail::require_cuda(out, DType::kF16, "vae_layer_norm output");
  OROCHI_CHECK(out.shape() == x.shape(), "vae_layer_norm: output ", out.describe(), " for input ", x.describe());
  detail::require_same_device(x, out, "vae_layer_norm");
  return detail::launch_status(kernels::launch_vae_layer_norm(f32_data(x), f32_data(weight), f32_data(bias),
                                                              f16_data(out), S, C, eps, stream),
                               "vae_layer_norm kernel");
}

Status vae_qk_norm_rope(const Tensor& x, float eps, const Tensor& cos, const Tensor& sin, cudaStream_t stream) {
  detail::require_cuda(x, DType::kF16, "vae_qk_norm_rope input");
  OROCHI_CHECK(x.ndim() == 3, "vae_qk_norm_rope input must be [S, heads, D], got ", x.describe());
  const int64_t S = x.dim(0), heads = x.dim(1), D = x.dim(2);
  detail::require_cuda(cos, DType::kF16, "vae_qk_norm_rope cos");
  detail::require_cuda(sin, DType::kF16, "vae_qk_norm_rope sin");
  const int64_t R = cos.ndim() == 2 ? cos.dim(1) : -1;
  OROCHI_CHECK(cos.ndim() == 2 && cos.dim(0) == S && sin.shape() == cos.shape() && R % 2 == 0 && R <= D,
               "vae_qk_norm_rope: cos ", cos.describe(), ", sin ", sin.describe(), " for input ", x.describe(),
               " (need [S, R] with R even and <= head_dim)");
  detail::require_same_device(x, cos, "vae_qk_norm_rope");
  return detail::launch_status(
      kernels::launch_vae_qk_norm_rope(f16_data(x), S, heads, D, eps, f16_data(cos), f16_data(sin), R, stream),
      "vae_qk_norm_rope kernel");
}

Status vae_swiglu(const Tensor& u, const Tensor& out, cudaStream_t stream) {
  const auto [M, two_i] = rows_of(u, DType::kF16, "vae_swiglu input");
  OROCHI_CHECK(two_i % 2 == 0, "vae_swiglu input width must be even, got ", u.describe());
  detail::require_cuda(out, DType::kF16, "vae_swiglu output");
  OROCHI_CHECK(out.shape() == (Shape{M, two_i / 2}), "vae_swiglu: output ", out.describe(), " for input ",
               u.describe());
  detail::require_same_device(u, out, "vae_swiglu");
  return detail::launch_status(kernels::launch_vae_swiglu(f16_data(u), f16_data(out), M, two_i / 2, stream),
                               "vae_swiglu kernel");
}

Status vae_add_scaled(const Tensor& h, const Tensor& y, const Tensor& scale, cudaStream_t stream) {
  const auto [S, C] = rows_of(h, DType::kF32, "vae_add_scaled state");
  detail::require_cuda(y, DType::kF16, "vae_add_scaled update");
  OROCHI_CHECK(y.shape() == h.shape(), "vae_add_scaled: update ", y.describe(), " for state ", h.describe());
  require_vector(scale, C, "vae_add_scaled scale");
  detail::require_same_device(h, y, "vae_add_scaled");
  return detail::launch_status(
      kernels::launch_vae_add_scaled(f32_data(h), f16_data(y), f32_data(scale), S, C, stream),
      "vae_add_scaled kernel");
}

Status vae_tokens(const Tensor& patches, const Tensor& registers, const Tensor& h, cudaStream_t stream) {
  const auto [N, D] = rows_of(patches, DType::kF16, "vae_tokens patches");
  const auto [R, Dr] = rows_of(registers, DType::kF16, "vae_tokens registers");
  detail::require_cuda(h, DType::kF32, "vae_tokens output");
  OROCHI_CHECK(Dr == D && h.shape() == (Shape{N + R + 1, D}), "vae_tokens: patches ", patches.describe(),
               " and registers ", registers.describe(), " do not fill output ", h.describe());
  detail::require_same_device(patches, h, "vae_tokens");
  return detail::launch_status(
      kernels::launch_vae_tokens(f16_data(patches), f16_data(registers), f32_data(h), N, R, D, stream),
      "vae_tokens kernel");
}

Status vae_unpatchify(const Tensor& patches, int64_t T, int64_t H, int64_t W, int64_t pt, int64_t p,
                      const Tensor& out, cudaStream_t stream) {
  const auto [N, values] = rows_of(patches, DType::kF16, "vae_unpatchify patches");
  OROCHI_CHECK(T > 0 && H > 0 && W > 0 && pt > 0 && p > 0 && N == T * H * W && values % (pt * p * p) == 0,
               "vae_unpatchify: patches ", patches.describe(), " for a ", T, "x", H, "x", W, " grid of ", pt, "x", p,
               "x", p, " patches");
  const int64_t ch = values / (pt * p * p);
  detail::require_cuda(out, DType::kF32, "vae_unpatchify output");
  OROCHI_CHECK(out.shape() == (Shape{ch, T * pt, H * p, W * p}), "vae_unpatchify: output ", out.describe(),
               ", expected ", shape_to_string(Shape{ch, T * pt, H * p, W * p}));
  detail::require_same_device(patches, out, "vae_unpatchify");
  return detail::launch_status(
      kernels::launch_vae_unpatchify(f16_data(patches), f32_data(out), T, H, W, ch, pt, p, stream),
      "vae_unpatchify kernel");
}

Status cast_to_f16(const Tensor& in, const Tensor& out, cudaStream_t stream) {
  detail::require_cuda(in, DType::kF32, "cast_to_f16 input");
  detail::require_cuda(out, DType::kF16, "cast_to_f16 output");
  OROCHI_CHECK(in.numel() == out.numel(), "cast_to_f16: ", in.describe(), " into ", out.describe());
  detail::require_same_device(in, out, "cast_to_f16");
  return detail::launch_status(kernels::launch_cast_f32_to_f16(f32_data(in), f16_data(out), in.numel(), stream),
                               "cast_to_f16 kernel");
}

}  // namespace orochi::cuda
