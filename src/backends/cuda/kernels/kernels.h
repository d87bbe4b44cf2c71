// Launchers of the CUDA elementwise / norm / row kernels: raw pointers, shapes and a stream, no
// framework types (ops.h wraps them on Tensors). Each returns the launch's cudaGetLastError().
// All tensors are contiguous row-major unless a `*_stride` (in elements) is given. Index arrays
// are int64, as the CPU ops and torch.index_select take them; their values are not checked on
// the device (callers validate index lists on the host when they build them).
// Each launcher picks 16-byte vector accesses when widths, strides and pointers allow it and a
// scalar path otherwise; both round identically.
#pragma once

#include <cuda_bf16.h>
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
cudaError_t launch_rms_norm(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps,
                            const ModulationRows* mod, cudaStream_t stream);

// In place over x [S, heads, D]: per-head RMSNorm (weight [D], rounded to bf16), then rotate-half
// RoPE on channels < R with bf16 cos/sin [S, R]: for i < R/2, with n the normalized head,
//   x[i] = bf16(bf16(n[i]·cos[i]) − bf16(n[i+R/2]·sin[i])),
//   x[i+R/2] = bf16(bf16(n[i+R/2]·cos[i+R/2]) + bf16(n[i]·sin[i+R/2])).
// Channels >= R keep n. R == 0 (cos = sin = nullptr) is the norm alone.
cudaError_t launch_qk_norm_rope(bf16* x, const bf16* w, int64_t S, int64_t heads, int64_t D, float eps,
                                const bf16* cos, const bf16* sin, int64_t R, cudaStream_t stream);

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

}  // namespace orochi::cuda::kernels
