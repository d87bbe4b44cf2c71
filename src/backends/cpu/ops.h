// The CPU op set: the readable reference every other backend is tested against. fp32 tensors,
// contiguous unless a parameter says "row-strided" (a 2-D view whose rows may be spaced wider than
// its width, such as one column block of a modulation table). Accumulation is fp32, as the
// reference implementations do it; plain loops, parallel over rows with OpenMP.
#pragma once

#include "core/tensor.h"

namespace orochi::cpu {

// y[M, N] = x[M, K] · w[N, K]^T (+ bias[N]).  x may have leading dims; they are flattened.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias = nullptr);

// y = x · rsqrt(mean(x², last dim) + eps) · weight; weight[C] where C is the last dim.
// Per-head norms pass x viewed as [..., heads, head_dim] with weight[head_dim].
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps);

// Elementwise x · sigmoid(x).
Tensor silu(const Tensor& x);
// u[M, 2I] = [value | gate]  ->  value · silu(gate), [M, I].
Tensor swiglu(const Tensor& u);

// Row-wise AdaLN modulation with a per-row table lookup:
//   y[s] = x[s] · (1 + scale[idx[s]]) + shift[idx[s]]
// x[S, C]; shift/scale row-strided [R, C]; idx i64 [S] with values in [0, R).
Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, const Tensor& idx);
// In place: h[s] += gate[idx[s]] · y[s].  h, y [S, C]; gate row-strided [R, C].
void gated_residual(Tensor& h, const Tensor& gate, const Tensor& idx, const Tensor& y);
// In place: h += y (same shapes).
void add_inplace(Tensor& h, const Tensor& y);

// Sinusoidal embedding of t[n] with `dim` channels: [cos(t·f_k) | sin(t·f_k)],
// f_k = exp(-ln(max_period) · k / (dim/2)); t is used unscaled.
Tensor timestep_embedding(const Tensor& t, int dim, float max_period = 10000.0f);

// inv_freq[k] = 1 / theta^(2k / (2F)), k < F.
Tensor rope_inv_freq(int freq_dim, float theta);
struct RopeTable {
  Tensor cos;  // [S, 6F]: angles [t·inv | h·inv | w·inv] repeated twice
  Tensor sin;
};
// positions f32 [S, 3] (t, h, w).
RopeTable rope_table(const Tensor& positions, const Tensor& inv_freq);
// In place, rotate-half over the first R = cos.dim(1) channels of each head:
//   x'[i] = x[i]·cos[i] − x[i+R/2]·sin[i],  x'[i+R/2] = x[i+R/2]·cos[i+R/2] + x[i]·sin[i+R/2].
// x [S, H, D] with D >= R.
void apply_rope(Tensor& x, const RopeTable& table);

// Full (unmasked, non-causal) softmax attention with scale 1/sqrt(D).
// q, k, v [S, H, D] -> [S, H, D].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v);

// out[i] = x[idx[i]]: x [S, C], idx i64 [n] -> [n, C].
Tensor gather_rows(const Tensor& x, const Tensor& idx);
// In place: dst[idx[i]] = src[i]: dst [S, C], src [n, C].
void scatter_rows(Tensor& dst, const Tensor& idx, const Tensor& src);

}  // namespace orochi::cpu
