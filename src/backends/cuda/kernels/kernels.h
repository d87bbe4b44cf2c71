// Launchers of the CUDA elementwise / norm / row kernels: raw pointers, shapes and a stream, no
// framework types (ops.h wraps them on Tensors). Each returns the launch's cudaGetLastError().
// All tensors are contiguous row-major unless a `*_stride` (in elements) is given. Index arrays
// are int64, as the CPU ops and torch.index_select take them; their values are not checked on
// the device (callers validate index lists on the host when they build them).
// Each launcher picks 16-byte vector accesses when widths, strides and pointers allow it and a
// scalar path otherwise; both round identically.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

using bf16 = __nv_bfloat16;

// Per-row AdaLN shift/scale: row r of the norm output uses table row idx[r]. The tables are column
// blocks of a [R, 6C] modulation table, so each has its own row stride (elements).
struct ModulationRows {
  const bf16* shift = nullptr;
  int64_t shift_stride = 0;
  const bf16* scale = nullptr;
  int64_t scale_stride = 0;
  const int64_t* idx = nullptr;  // [rows]
};

// y[r] = bf16(x[r] · rsqrt(mean(x[r]²) + eps) · w), fp32 inside. With `mod`, continues as
// diffusers' bf16 ops round: y = bf16(bf16(y · bf16(1 + scale[idx[r]])) + shift[idx[r]]).
// x, y [rows, C]; w [C].
// `round_before_weight`: transformers' LLM RMSNorm (Qwen3) rounds the normalized row to bf16 before
// multiplying by the weight, y = bf16(w · bf16(x · rsqrt(...))); diffusers' H3 rounds once.
cudaError_t launch_rms_norm(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps,
                            const ModulationRows* mod, cudaStream_t stream, bool round_before_weight = false);

// launch_gated_residual then launch_rms_norm (with `mod`, diffusers' rounding) of the updated rows,
// in one pass with the same bits: h[s] = bf16(h[s] + bf16(gate[idx[s]] · y[s])) in place, then
// out = rms_norm(h) (modulated). h, y, out [rows, C]; gate rows `gate_stride` apart.
cudaError_t launch_gated_residual_rms_norm(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                           const bf16* y, const bf16* w, bf16* out, int64_t rows, int64_t C,
                                           float eps, const ModulationRows* mod, cudaStream_t stream);

// In place over x [S, heads, D]: per-head RMSNorm (weight [D], rounded to bf16), then rotate-half
// RoPE on channels < R with bf16 cos/sin [S, R]: for i < R/2, with n the normalized head,
//   x[i] = bf16(bf16(n[i]·cos[i]) − bf16(n[i+R/2]·sin[i])),
//   x[i+R/2] = bf16(bf16(n[i+R/2]·cos[i+R/2]) + bf16(n[i]·sin[i+R/2])).
// Channels >= R keep n. R == 0 (cos = sin = nullptr) is the norm alone.
// For D = 128: one block per sequence row (the default: 0.152 ms where one warp per head took 0.203
// at H3's 480p q on an H200, bench/RESULTS.md), or, with `items_kernel`, one warp per head.
cudaError_t launch_qk_norm_rope(bf16* x, const bf16* w, int64_t S, int64_t heads, int64_t D, float eps,
                                const bf16* cos, const bf16* sin, int64_t R, cudaStream_t stream,
                                bool round_before_weight = false, bool items_kernel = false);

// u [M, 2I] = [value | gate] -> out [M, I] = bf16(value · bf16(silu(gate))).
cudaError_t launch_swiglu(const bf16* u, bf16* out, int64_t M, int64_t I, cudaStream_t stream);

// In place h [S, C]: h[s] = bf16(h[s] + bf16(gate[idx[s]] · y[s])); gate rows `gate_stride` apart.
cudaError_t launch_gated_residual(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                  const bf16* y, int64_t S, int64_t C, cudaStream_t stream);

// In place h[i] = bf16(h[i] + y[i]) over n elements.
cudaError_t launch_add(bf16* h, const bf16* y, int64_t n, cudaStream_t stream);

// Elementwise dtype casts over n elements (to bf16: round to nearest even, as torch's .to()).
cudaError_t launch_cast_f32_to_bf16(const float* in, bf16* out, int64_t n, cudaStream_t stream);
cudaError_t launch_cast_bf16_to_f32(const bf16* in, float* out, int64_t n, cudaStream_t stream);

// Copies n rows of row_bytes: dst row (dst_idx ? dst_idx[i] : i) = src row (src_idx ? src_idx[i] : i).
// Rows are *_stride_bytes apart. Gather passes src_idx, scatter dst_idx. With repeated scatter
// indices the surviving row is unspecified.
cudaError_t launch_copy_rows(void* dst, int64_t dst_stride_bytes, const int64_t* dst_idx, const void* src,
                             int64_t src_stride_bytes, const int64_t* src_idx, int64_t n, int64_t row_bytes,
                             cudaStream_t stream);

// ---- The video VAE decoder's fp16-autocast kernels (vae_norm.cu, vae_elementwise.cu). The
// residual stream is f32, the linears' operands f16; every f16 result is rounded once (nearest
// even) where torch's fp16 op rounds.
using f16 = __half;

// y[r] = f16(x[r] · rsqrt(mean(x[r]²) + eps) · w), all fp32 inside. x [rows, C] f32, w [C] f32.
cudaError_t launch_vae_rms_norm(const float* x, const float* w, f16* y, int64_t rows, int64_t C, float eps,
                                cudaStream_t stream);

// y[r] = f16((x[r] − mean) · rsqrt(var + eps) · w + b), biased variance, fp32 inside.
cudaError_t launch_vae_layer_norm(const float* x, const float* w, const float* b, f16* y, int64_t rows, int64_t C,
                                  float eps, cudaStream_t stream);

// In place over x [S, heads, D] f16: per-head RMSNorm without weight in fp32, rounded to f16 (n),
// then rotate-half RoPE on channels < R with f16 cos/sin [S, R], each product and the sum rounded:
//   x[i] = f16(f16(n[i]·cos[i]) − f16(n[i+R/2]·sin[i])), x[i+R/2] = f16(f16(n[i+R/2]·cos) + f16(n[i]·sin)).
cudaError_t launch_vae_qk_norm_rope(f16* x, int64_t S, int64_t heads, int64_t D, float eps, const f16* cos,
                                    const f16* sin, int64_t R, cudaStream_t stream);

// u [M, 2I] = [value | gate] f16 -> out [M, I] = f16(value · f16(silu(gate))).
cudaError_t launch_vae_swiglu(const f16* u, f16* out, int64_t M, int64_t I, cudaStream_t stream);

// In place LayerScale residual h[s, c] = h[s, c] + f32(y[s, c]) · scale[c] (two fp32 roundings, no
// FMA, as torch's `h + y * scale`). h [S, C] f32, y [S, C] f16, scale [C] f32.
cudaError_t launch_vae_add_scaled(float* h, const f16* y, const float* scale, int64_t S, int64_t C,
                                  cudaStream_t stream);

// The decoder's token rows h [N + R + 1, D] f32: rows < N from patches [N, D] f16, the next R from
// registers [R, D] f16, the last row zero.
cudaError_t launch_vae_tokens(const f16* patches, const f16* registers, float* h, int64_t N, int64_t R, int64_t D,
                              cudaStream_t stream);

// Unpatchify: token (t, y, x) of a T x H x W grid, row ((t·H + y)·W + x) of patches [N, ch·pt·p·p]
// f16 ordered (c, a, b, d), goes to out[c, t·pt + a, y·p + b, x·p + d] of out [ch, T·pt, H·p, W·p] f32.
cudaError_t launch_vae_unpatchify(const f16* patches, float* out, int64_t T, int64_t H, int64_t W, int64_t ch,
                                  int64_t pt, int64_t p, cudaStream_t stream);

// out[i] = f16(in[i]) (nearest even) over n elements.
cudaError_t launch_cast_f32_to_f16(const float* in, f16* out, int64_t n, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
