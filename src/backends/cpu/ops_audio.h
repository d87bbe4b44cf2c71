// CPU ops for 1-D audio networks (the BigVGAN decoder of the H3 audio VAE). Tensors are
// contiguous f32 [B, C, L] (batch, channels, time), as in PyTorch's Conv1d; plain loops with fp32
// accumulation, OpenMP over (batch, channel) rows.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace orochi::cpu {

struct Conv1dParams {
  int64_t stride = 1;
  int64_t padding = 0;  // zeros on both sides
  int64_t dilation = 1;
  int64_t groups = 1;
};
// torch.nn.functional.conv1d: x [B, Cin, L], w [Cout, Cin/groups, K], bias [Cout] or null
//   -> [B, Cout, Lout], Lout = (L + 2·padding − dilation·(K − 1) − 1) / stride + 1 (must be >= 1).
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv1dParams& params = {});

struct ConvTranspose1dParams {
  int64_t stride = 1;
  int64_t padding = 0;  // cropped from both ends of the full output
  int64_t groups = 1;
};
// torch.nn.functional.conv_transpose1d (dilation 1, no output padding): x [B, Cin, L],
// w [Cin, Cout/groups, K], bias [Cout] or null -> [B, Cout, (L − 1)·stride − 2·padding + K].
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvTranspose1dParams& params = {});

// F.pad(x, (left, right), mode="replicate"): repeats the edge samples. [B, C, L] -> [B, C, L+left+right].
Tensor pad_replicate1d(const Tensor& x, int64_t left, int64_t right);

// BigVGAN's SnakeBeta with log-scale parameters [C]:
//   y = x + 1 / (exp(log_beta) + 1e-9) · sin²(exp(log_alpha) · x)
Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta);

// Anti-aliased resampling with one low-pass filter[K] shared by every channel (alias-free-torch /
// BigVGAN, as in diffusers' MiniMaxH3AudioUpSample1d / LowPassFilter1d).
// Upsample: replicate-pad p = K/ratio − 1 each side, depthwise transposed conv with stride `ratio`,
// times ratio, then crop p·ratio + (K − ratio)/2 from the left and p·ratio + (K − ratio + 1)/2
// from the right: [B, C, L] -> [B, C, ratio·L].
Tensor upsample1d_lowpass(const Tensor& x, const Tensor& filter, int64_t ratio);
// Downsample: replicate-pad K/2 − (K even) left and K/2 right, depthwise conv with stride `ratio`:
// [B, C, L] -> [B, C, (L − 1)/ratio + 1]  (L/ratio when ratio divides L).
Tensor downsample1d_lowpass(const Tensor& x, const Tensor& filter, int64_t ratio);

// In place: x = min(max(x, lo), hi); NaN stays NaN, as torch.clamp keeps it.
void clamp_inplace(Tensor& x, float lo, float hi);

}  // namespace orochi::cpu
