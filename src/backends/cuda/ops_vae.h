// CUDA ops of the MiniMax-H3 video VAE decoder, which runs as the reference does under fp16
// autocast (MODELS_H3.md §4): the residual stream and the norms in f32, the linears' operands and
// outputs in f16 (GemmRunner's f16 flavour), attention in f16 (CudnnAttention, dtype kF16). Each op
// matches the CPU op of the same role (backends/cpu/ops.h, ops_vae.h) up to the f16 roundings,
// which sit where torch's f16 ops round.
//
// Conventions as ops.h: contiguous CUDA tensors, outputs passed in, work enqueued on `stream`;
// wrong shapes, dtypes or devices are caller bugs (OROCHI_CHECK), a failed launch is a Status.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// out = f16(rms_norm(x) · weight), x [S, C] f32, weight [C] f32, out [S, C] f16.
Status vae_rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, cudaStream_t stream);

// out = f16(layer_norm(x) · weight + bias), x [S, C] f32, weight and bias [C] f32, out [S, C] f16.
Status vae_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out,
                      cudaStream_t stream);

// In place on q or k [S, heads, D] f16: per-head RMSNorm without weight (fp32 inside, rounded to
// f16), then rotate-half RoPE over the first R channels with f16 cos/sin [S, R].
Status vae_qk_norm_rope(const Tensor& x, float eps, const Tensor& cos, const Tensor& sin, cudaStream_t stream);

// u [M, 2I] = [value | gate] f16 -> out [M, I] = f16(value · f16(silu(gate))).
Status vae_swiglu(const Tensor& u, const Tensor& out, cudaStream_t stream);

// In place LayerScale residual: h += f32(y) · scale. h [S, C] f32, y [S, C] f16, scale [C] f32.
Status vae_add_scaled(const Tensor& h, const Tensor& y, const Tensor& scale, cudaStream_t stream);

// h [N + R + 1, D] f32 = [patches [N, D] f16 | registers [R, D] f16 | one zero row].
Status vae_tokens(const Tensor& patches, const Tensor& registers, const Tensor& h, cudaStream_t stream);

// patches [T·H·W, ch·pt·p·p] f16 (values ordered (c, pt, ph, pw)) -> out [ch, T·pt, H·p, W·p] f32.
Status vae_unpatchify(const Tensor& patches, int64_t T, int64_t H, int64_t W, int64_t pt, int64_t p,
                      const Tensor& out, cudaStream_t stream);

// out = f16(in), nearest even; same element count.
Status cast_to_f16(const Tensor& in, const Tensor& out, cudaStream_t stream);

}  // namespace orochi::cuda
