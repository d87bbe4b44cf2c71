// CPU ops the H3 audio VAE encoder adds (the DAC trunk and the attention projection `pre_block`).
// The convolutions are those of ops_audio.h; same conventions: contiguous f32, fp32 accumulation,
// plain loops.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace orochi::cpu {

// DAC's Snake with a plain (not log-scale) per-channel alpha [C]:
//   y = x + 1 / (alpha + 1e-9) · sin²(alpha · x),   x [B, C, L] -> [B, C, L].
Tensor snake(const Tensor& x, const Tensor& alpha);

// GeGLU's product: gelu_tanh(gate) · up, elementwise (same shapes), with torch's tanh GELU
//   gelu_tanh(a) = 0.5 · a · (1 + tanh(sqrt(2/pi) · (a + 0.044715 · a³))).
Tensor gelu_tanh_mul(const Tensor& gate, const Tensor& up);

// The audio attention's head reduction: the mean over heads, then adaptive average pooling of the
// head dim D down to `out_dim` (window i spans [floor(i·D/out), ceil((i+1)·D/out)), as
// F.adaptive_avg_pool1d). x [S, H, D] -> [S, out_dim]; out_dim >= 1 (above D windows repeat).
Tensor pool_heads(const Tensor& x, int64_t out_dim);

}  // namespace orochi::cpu
