// CPU ops the MiniMax-H3 video VAE decoder adds to the op set (ops.h holds the shared ones).
// Same conventions: contiguous fp32 tensors, fp32 accumulation, plain loops.
#pragma once

#include "core/tensor.h"

namespace orochi::cpu {

// y = (x − mean) · rsqrt(var + eps) · weight + bias over the last dim C (biased variance, as
// torch.nn.LayerNorm); weight[C], bias[C].
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

// In place LayerScale residual: h[s, c] += y[s, c] · scale[c].  h, y [S, C]; scale [C].
void add_scaled_inplace(Tensor& h, const Tensor& y, const Tensor& scale);

}  // namespace orochi::cpu
