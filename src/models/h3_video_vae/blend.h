// The linear cross-fade the video VAE uses to join temporal chunks and spatial tiles (the
// reference's `_blend`), with its arithmetic reproduced in the dtype the reference runs it in:
// the decoder output's dtype — fp32 in an fp32 decode, fp16 under fp16 autocast, bf16 in a bf16
// pipeline. Reproducing it exactly is what makes a split decode bit-identical to a one-call decode.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace orochi::h3vae {

enum class BlendPrecision { kF32, kF16, kBF16 };

// Rounds an fp32 value to the blend precision (identity for kF32).
float round_to_precision(float value, BlendPrecision precision);

// Along dim `d`, with n = min(a.dim(d), b.dim(d), extent) and k < n:
//   w_b = P(P(k) / n), w_a = P(1 − w_b), out[k] = P(P(a[a.dim(d) − n + k] · w_a) + P(b[k] · w_b)),
// P = rounding to `precision` after every op (each op computes in fp32, as PyTorch does for fp16 and
// bf16; k / n is a true division, as on PyTorch's CPU). out[k >= n] = b[k]. The result has b's
// shape. a and b are contiguous f32 tensors that agree on every dim but d.
Tensor linear_blend(const Tensor& a, const Tensor& b, int64_t extent, int d, BlendPrecision precision);

}  // namespace orochi::h3vae
