// CUDA ops of the H3 audio VAE encoder (the DAC trunk and pre_block), all f32, on time-major
// [B, L, C] signals as the decoder's ops (ops_audio.h). Each matches its CPU counterpart
// (backends/cpu/ops_audio_encoder.h, ops_audio.h's conv1d, ops_vae.h's layer_norm, ops_llm.h's
// causal attention) up to fp32 summation order.
//
// Conventions as ops.h: contiguous CUDA tensors, outputs passed in, work enqueued on `stream`;
// wrong shapes, dtypes or devices are caller bugs (OROCHI_CHECK), a failed launch is a Status.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/gemm.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

// cpu::snake on [B, L, C]: x, out [B, L, C] (out may be x), alpha [C].
Status audio_snake(const Tensor& x, const Tensor& alpha, const Tensor& out, cudaStream_t stream);

// cpu::conv1d (groups 1) with any stride, dilation and zero padding: x [B, L, Cin], w_gemm
// [Cout, K·Cin] (conv1d_weight_for_gemm), bias [Cout] or null -> out [B, Lout, Cout],
// Lout = (L + 2·padding − dilation·(K − 1) − 1) / stride + 1. A 1x1 unstrided, unpadded conv is one
// GEMM; otherwise the im2col runs per item over as many output steps as `scratch` (f32, any shape,
// at least K·Cin elements) holds, each piece followed by its GEMM, so the scratch bounds the memory
// and not the signal length.
Status audio_conv1d_any(GemmRunner& gemm, const Tensor& x, const Tensor& w_gemm, const Tensor* bias, int64_t stride,
                        int64_t dilation, int64_t padding, const Tensor& scratch, const Tensor& out,
                        cudaStream_t stream);

// cpu::layer_norm in f32: x, out [rows, C] (out may be x), weight and bias [C].
Status audio_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out,
                        cudaStream_t stream);

// cpu::causal_attention_gqa per item (H query and key/value heads) then cpu::pool_heads:
// qkv [B, A, 3·H·D] (the fused projection with its bias) -> out [B, A, out_dim].
// A <= kernels::kAudioAttentionMaxSteps and A + D <= 12288.
Status audio_causal_attention_pool(const Tensor& qkv, int64_t heads, const Tensor& out, cudaStream_t stream);

// cpu::gelu_tanh_mul: gate, up, out of one shape (out may be gate or up).
Status audio_gelu_tanh_mul(const Tensor& gate, const Tensor& up, const Tensor& out, cudaStream_t stream);

}  // namespace orochi::cuda
