// The CUDA op set for the H3 denoiser's bf16 block: each op matches the CPU op of the same name
// (backends/cpu/ops.h) and rounds to bf16 exactly where diffusers' bf16 PyTorch ops round
// (MODELS_H3.md §1.4): fp32 math inside an op, one rounding per PyTorch op.
//
// Conventions:
// - Tensors are CUDA tensors (Buffer device kCUDA), contiguous, bf16 unless stated. "Row-strided"
//   tables are 2-D views whose rows may be spaced wider than their width (one column block of a
//   [R, 6C] modulation table, made with Tensor::slice(1, ...)).
// - Index vectors are contiguous int64 CUDA tensors, as the CPU ops take them; their values are not
//   checked on the device (models check index lists on the host when they build them).
// - Outputs are passed in (allocated by the caller, e.g. from a DeviceArena) and written on `stream`;
//   a `const Tensor&` output is a handle whose bytes are written. Overloads taking a DeviceArena
//   allocate the output there.
// - Wrong shapes, dtypes or devices are caller bugs (OROCHI_CHECK); a failed launch is a Status.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/device_memory.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// out = x · rsqrt(mean(x², last dim) + eps) · weight, rounded once. x, out [..., C]; weight [C].
Status rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, cudaStream_t stream);
Expected<Tensor> rms_norm(const Tensor& x, const Tensor& weight, float eps, DeviceArena& arena,
                          cudaStream_t stream);

// AdaLN pre-norm: n = rms_norm(x), then out = bf16(bf16(n · bf16(1 + scale[idx])) + shift[idx]).
// x, out [S, C]; shift, scale row-strided [R, C]; idx [S] in [0, R).
Status rms_norm_modulate(const Tensor& x, const Tensor& weight, float eps, const Tensor& shift, const Tensor& scale,
                         const Tensor& idx, const Tensor& out, cudaStream_t stream);
Expected<Tensor> rms_norm_modulate(const Tensor& x, const Tensor& weight, float eps, const Tensor& shift,
                                   const Tensor& scale, const Tensor& idx, DeviceArena& arena, cudaStream_t stream);

// gated_residual(h, gate, idx, y) then rms_norm_modulate(h, ...) into out, in one kernel with the
// same bits (the block's residual after attention and the pre-norm of its FFN). h, y, out [S, C];
// gate, shift, scale row-strided [R, C]; idx [S] in [0, R) for all three.
Status gated_residual_rms_norm_modulate(const Tensor& h, const Tensor& gate, const Tensor& y, const Tensor& weight,
                                        float eps, const Tensor& shift, const Tensor& scale, const Tensor& idx,
                                        const Tensor& out, cudaStream_t stream);

// In place on q or k [S, heads, D]: per-head RMSNorm (weight [D]), then rotate-half RoPE over the
// first R channels with bf16 cos/sin [S, R] (cast the fp32 RoPE table to bf16 first, as diffusers
// does). Pass undefined cos/sin for the norm alone (the token refiner).
// `items_kernel`: kernels::launch_qk_norm_rope's one-warp-per-head variant (for comparisons).
Status qk_norm_rope(const Tensor& x, const Tensor& weight, float eps, const Tensor& cos, const Tensor& sin,
                    cudaStream_t stream, bool items_kernel = false);

// u [M, 2I] = [value | gate] -> out [M, I] = bf16(value · bf16(silu(gate))).
Status swiglu(const Tensor& u, const Tensor& out, cudaStream_t stream);
Expected<Tensor> swiglu(const Tensor& u, DeviceArena& arena, cudaStream_t stream);

// In place: h[s] = bf16(h[s] + bf16(gate[idx[s]] · y[s])). h, y [S, C]; gate row-strided [R, C].
Status gated_residual(const Tensor& h, const Tensor& gate, const Tensor& idx, const Tensor& y, cudaStream_t stream);
// In place: h = bf16(h + y), same shapes.
Status add_inplace(const Tensor& h, const Tensor& y, cudaStream_t stream);

// out[i] = x[idx[i]]: x [S, C], idx [n] -> out [n, C]. Any dtype (bf16 and f32 in practice).
Status gather_rows(const Tensor& x, const Tensor& idx, const Tensor& out, cudaStream_t stream);
Expected<Tensor> gather_rows(const Tensor& x, const Tensor& idx, DeviceArena& arena, cudaStream_t stream);
// In place: dst[idx[i]] = src[i]: dst [S, C], src [n, C] of the same dtype. Repeated indices leave
// one of their rows, unspecified which.
Status scatter_rows(const Tensor& dst, const Tensor& idx, const Tensor& src, cudaStream_t stream);

// out = in converted f32 -> bf16 (round to nearest even) or bf16 -> f32; same shape.
Status cast(const Tensor& in, const Tensor& out, cudaStream_t stream);
Expected<Tensor> cast(const Tensor& in, DType target, DeviceArena& arena, cudaStream_t stream);

}  // namespace orochi::cuda
