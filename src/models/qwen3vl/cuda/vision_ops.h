// The Qwen3-VL vision tower's CUDA ops on Tensors (bf16 CUDA tensors unless stated): each matches a
// step of the CPU reference (vision_model.cpp) and rounds where transformers' bf16 modules round.
// Conventions as backends/cuda/ops.h: contiguous tensors, outputs passed in, work enqueued on
// `stream`; wrong shapes, dtypes or devices are caller bugs (OROCHI_CHECK), a failed launch is a
// Status.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::qwen3vl::gpu {

// nn.LayerNorm: out = bf16((x − mean) · rsqrt(var + eps) · weight + bias). x, out [S, C]; weight, bias [C].
Status layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out,
                  cudaStream_t stream);

// In place GELU of every value: tanh approximation or erf.
Status gelu_inplace(const Tensor& x, bool tanh_approximation, cudaStream_t stream);

// qkv [S, 3·heads·D] -> q, k, v [S, heads, D], q and k rotated with cos/sin f32 [S, D] in fp32.
Status qkv_split_rope(const Tensor& qkv, const Tensor& cos, const Tensor& sin, const Tensor& q, const Tensor& k,
                      const Tensor& v, cudaStream_t stream);

// In place: x[n] += bf16(Σ_k table[index[n, k]] · weight[n, k]) (rounded to bf16 after the fp32 sum).
// x [N, C]; table [P, C]; index i64 [N, 4] and weight f32 [N, 4] on the device (values in [0, P),
// checked by the caller on the host).
Status add_position_embeddings(const Tensor& x, const Tensor& table, const Tensor& index, const Tensor& weight,
                               cudaStream_t stream);

}  // namespace orochi::qwen3vl::gpu
