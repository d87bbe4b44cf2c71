// Launchers of the audio VAE encoder's CUDA kernels (audio_encoder.cu): raw pointers, shapes and a
// stream, no framework types (ops_audio_encoder.h wraps them on Tensors). Each returns the launch's
// cudaGetLastError(). Signals are f32 and time-major [B, L, C], as the decoder's (audio_kernels.h).
// Arithmetic follows the CPU ops (backends/cpu/ops_audio_encoder.h, layer_norm.cpp,
// causal_attention.cpp) step by step, each step rounded once (no FMA contraction), so the only
// differences are summation order and the device's sinf/tanhf/expf.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// The longest sequence audio_causal_attention_pool takes (205 s at 40 latents/s): its scores and
// the head sums live in 48 KiB of shared memory, so A + D must stay below 12288 too.
inline constexpr int64_t kAudioAttentionMaxSteps = 8192;

// DAC Snake: out = x + 1/(alpha[c] + 1e-9) · sin²(alpha[c] · x) over x [B, L, C] (n = B·L·C
// elements, channel fastest); out may alias x.
cudaError_t launch_audio_snake(const float* x, const float* alpha, float* out, int64_t n, int64_t C,
                               cudaStream_t stream);

// One item's im2col for a strided, dilated convolution, over output steps [t_begin, t_begin + rows):
// col[r, k·C + c] = x[item, (t_begin + r)·stride + k·dilation − padding, c], 0 outside [0, L).
// x [B, L, C] -> col [rows, K·C].
cudaError_t launch_audio_im2col_rows(const float* x, float* col, int64_t L, int64_t C, int64_t item, int64_t t_begin,
                                     int64_t rows, int64_t K, int64_t stride, int64_t dilation, int64_t padding,
                                     cudaStream_t stream);

// nn.LayerNorm over the last dim in f32 (fp64 row statistics, as the CPU op):
// out[r] = (x[r] − mean)·rsqrt(var + eps)·weight + bias; x, out [rows, C] (out may alias x).
cudaError_t launch_audio_layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t rows,
                                    int64_t C, float eps, cudaStream_t stream);

// The audio encoder's attention, from the fused projection to the pooled heads: for each item b and
// step i, per head h, softmax(q_i·k_j / sqrt(D), j <= i) · v_j; the heads' mean; then adaptive
// average pooling of D to out_dim. qkv [B, A, 3·H·D] (q | k | v, head-major, the bias already added)
// -> out [B, A, out_dim]. A <= kAudioAttentionMaxSteps.
cudaError_t launch_audio_causal_attention_pool(const float* qkv, float* out, int64_t B, int64_t A, int64_t H, int64_t D,
                                               int64_t out_dim, cudaStream_t stream);

// GeGLU's product: out = gelu_tanh(gate) · up over n elements (out may alias gate or up).
cudaError_t launch_audio_gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
