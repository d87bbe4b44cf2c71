// CPU ops the MiniMax-H3 video VAE encoder (a causal 3-D CNN) adds to the op set. Same conventions
// as ops.h: contiguous fp32 tensors, plain loops, fp32 accumulation in the reference's order where
// it matters. Video activations are one sample at a time, laid out [C, T, H, W].
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace orochi::cpu {

struct Conv3dParams {
  int64_t stride_t = 1, stride_h = 1, stride_w = 1;
  // Zero frames put in front of the input (the encoder's causal padding: kt − 1 frames, none
  // behind). Spatial padding is a separate op (reflect_pad_hw), as in the reference.
  int64_t causal_pad_t = 0;
};

// y[co, t, i, j] = bias[co] + Σ_{ci, a, b, c} w[co, ci, a, b, c] · xp[ci, t·st + a, i·sh + b, j·sw + c]
// where xp is x with `causal_pad_t` zero frames in front (no spatial padding, no groups, no dilation).
// x [Cin, T, H, W], w [Cout, Cin, kt, kh, kw], bias [Cout] or null -> y [Cout, To, Ho, Wo] with
// To = (T + pad − kt) / st + 1, Ho = (H − kh) / sh + 1, Wo = (W − kw) / sw + 1.
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv3dParams& params);

// F.pad(x, (left, right, top, bottom), mode="reflect") on the last two dims of [C, T, H, W]: the
// border is mirrored without repeating the edge (index −1 reads 1). Each pad must be < its dim.
Tensor reflect_pad_hw(const Tensor& x, int64_t top, int64_t bottom, int64_t left, int64_t right);

// GroupNorm applied to every frame on its own (time folded into the batch, as the reference's
// MiniMaxH3VideoGroupNorm): for frame t and group g of C / groups channels,
// y = (x − mean) · rsqrt(var + eps) · weight[c] + bias[c], biased variance over (channels, H, W).
// x [C, T, H, W]; weight, bias [C].
Tensor group_norm_per_frame(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups, float eps);

// The same followed by SiLU (x · sigmoid(x)), the encoder's norm + activation pair, in one pass.
Tensor group_norm_silu_per_frame(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups,
                                 float eps);

}  // namespace orochi::cpu
