// CUDA ops of the H3 audio VAE decoder (BigVGAN), all f32. Signals are time-major "audio rows"
// [B, L, C] (the CPU ops in backends/cpu/ops_audio.h take [B, C, L]): convolutions are then GEMMs
// over rows (GemmRunner f32, no TF32) on an im2col of the input, and every kernel is coalesced over
// channels. Each op matches its CPU counterpart up to fp32 summation order.
//
// Conventions as ops.h: contiguous CUDA tensors, outputs passed in, work enqueued on `stream`;
// wrong shapes, dtypes or devices are caller bugs (OROCHI_CHECK), a failed launch is a Status.
// `scratch` arguments are f32 CUDA tensors of at least the stated number of elements (any shape).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/gemm.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// ---- Weight layouts (host, f32 -> f32).
// Conv1d weight [Cout, Cin, K] -> the GEMM's [Cout, K·Cin] (column k·Cin + ci), matching audio_im2col.
Tensor conv1d_weight_for_gemm(const Tensor& w);
// ConvTranspose1d weight [Cin, Cout, K] -> [K·Cout, Cin] (row k·Cout + co), matching
// audio_conv_transpose1d's gather.
Tensor conv_transpose1d_weight_for_gemm(const Tensor& w);

// ---- Ops on [B, L, C] f32 signals.
// Alias-free SnakeBeta (cpu::upsample1d_lowpass 2x -> cpu::snake_beta -> cpu::downsample1d_lowpass 2x):
// x, out [B, L, C] (distinct); log_alpha, log_beta [C]; up_filter, down_filter [12].
Status audio_alias_free_snake(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta,
                              const Tensor& up_filter, const Tensor& down_filter, const Tensor& out,
                              cudaStream_t stream);

// col[b, t, k·C + c] = x[b, t + k·dilation − padding, c], zero outside: x [B, L, C] -> col
// [B, Lout, K·C], Lout = L + 2·padding − dilation·(K − 1).
Status audio_im2col(const Tensor& x, int64_t kernel, int64_t dilation, int64_t padding, const Tensor& col,
                    cudaStream_t stream);

// Stride-1 Conv1d (cpu::conv1d with groups 1): x [B, L, Cin], w_gemm [Cout, K·Cin]
// (conv1d_weight_for_gemm), bias [Cout] or null -> out [B, Lout, Cout]. K == 1 with no padding is
// one GEMM; otherwise scratch holds the im2col (B·Lout·K·Cin elements).
Status audio_conv1d(GemmRunner& gemm, const Tensor& x, const Tensor& w_gemm, const Tensor* bias, int64_t dilation,
                    int64_t padding, const Tensor& scratch, const Tensor& out, cudaStream_t stream);

// ConvTranspose1d (cpu::conv_transpose1d with groups 1): x [B, Lin, Cin], w_gemm [K·Cout, Cin]
// (conv_transpose1d_weight_for_gemm), bias [Cout] or null -> out [B, Lout, Cout],
// Lout = (Lin − 1)·stride − 2·padding + K. scratch holds the GEMM's B·Lin·K·Cout products.
Status audio_conv_transpose1d(GemmRunner& gemm, const Tensor& x, const Tensor& w_gemm, const Tensor* bias,
                              int64_t kernel, int64_t stride, int64_t padding, const Tensor& scratch,
                              const Tensor& out, cudaStream_t stream);

// BigVGAN's conv_post and the output clamp: x [B, L, Cin], w [1, Cin, K] (as stored), bias [1] or
// null -> out [B, Lout] = clamp(conv1d(x), lo, hi) (NaN stays NaN), Lout = L + 2·padding − K + 1.
Status audio_conv1d_mono_clamp(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t padding, float lo,
                               float hi, const Tensor& out, cudaStream_t stream);

// out = (acc + (a + b)) / divisor elementwise (acc undefined: (a + b) / divisor), each step rounded
// once: the AMP block's residual (h + r) and the mean of the blocks. out may be acc or a. Same numel.
Status audio_residual_sum(const Tensor& out, const Tensor& acc, const Tensor& a, const Tensor& b, float divisor,
                          cudaStream_t stream);

}  // namespace orochi::cuda
