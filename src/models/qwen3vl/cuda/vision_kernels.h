// Launchers of the Qwen3-VL vision tower's own CUDA kernels (bf16, as transformers' bf16 modules
// round): raw pointers, shapes and a stream, no framework types (vision_ops.h wraps them on
// Tensors). Each returns the launch's cudaGetLastError().
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::qwen3vl::gpu::kernels {

using bf16 = __nv_bfloat16;

// nn.LayerNorm in bf16: y = bf16((x − mean) · rsqrt(var + eps) · w + b), fp32 inside (two-pass
// statistics). x, y [rows, C]; w, b [C].
cudaError_t launch_layer_norm(const bf16* x, const bf16* w, const bf16* b, bf16* y, int64_t rows, int64_t C, float eps,
                              cudaStream_t stream);

// In place GELU over n values, fp32 inside, rounded once: tanh ("gelu_pytorch_tanh") or erf (nn.GELU()).
cudaError_t launch_gelu(bf16* x, int64_t n, bool tanh_approximation, cudaStream_t stream);

// qkv [S, 3, heads, D] (the fused projection's output) -> q, k, v [S, heads, D]; q and k rotated in
// fp32 with cos/sin f32 [S, D] (rotate-half over the whole head) and rounded once, as transformers'
// apply_rotary_pos_emb_vision: q' = q·cos + rotate_half(q)·sin.
cudaError_t launch_qkv_split_rope(const bf16* qkv, const float* cos, const float* sin, bf16* q, bf16* k, bf16* v,
                                  int64_t S, int64_t heads, int64_t D, cudaStream_t stream);

// In place: x[n] = bf16(x[n] + bf16(Σ_k table[index[4n+k]] · weight[4n+k])), the products and sum in
// fp32 (bf16 table x f32 weights promotes to f32 in torch). x [N, C], table [P, C], index/weight [N, 4].
cudaError_t launch_add_position_embeddings(bf16* x, const bf16* table, const int64_t* index, const float* weight,
                                           int64_t N, int64_t C, cudaStream_t stream);

}  // namespace orochi::qwen3vl::gpu::kernels
