// Per-tensor quantization (issue 25: the operands of cuDNN's FP8 attention, which takes one descale
// per tensor), the CPU twin the CUDA kernels (backends/cuda/kernels/quantize_tensor_kernels.h) are
// tested against bit for bit. The scale is core/quantize.h's row_scale of the whole tensor's amax
// and each code its quantize_value; what is new is where the amax comes from and an optional
// per-column offset:
//  - x is seen as [R, C] (C = the last axes flattened: heads · head dim for attention's [S, H, D]);
//  - a column offset (SageAttention's K smoothing: K minus its per-channel mean over keys; the
//    softmax of every query row is unchanged, since each score of the row moves by the same q·mean)
//    is subtracted in f32 before the amax and the codes: value = float(x) - offset[c];
//  - the column means are summed in the GPU's order: f32 partial sums over tiles of
//    kColumnMeanTileRows rows, row by row, then the partials tile by tile, then one division by R.
#pragma once

#include <cstdint>
#include <vector>

#include "core/quantize.h"
#include "core/tensor.h"

namespace orochi {

inline constexpr int64_t kColumnMeanTileRows = 512;

// x [R, C] bf16 or f32 -> [C] f32 means over rows, in the order above.
std::vector<float> column_means(const Tensor& x);

struct TensorQuantized {
  Tensor codes;       // x's shape, kF8E4M3 (scale() 1)
  float amax = 0;     // of the (offset) values
  RowScale scale;     // row_scale(amax, kF8E4M3): values ≈ code · scale.scale
};

// x [R, C] bf16 or f32, offset empty or [C] -> e4m3 codes with one scale.
TensorQuantized quantize_tensor(const Tensor& x, const std::vector<float>& column_offset = {});

// bf16 bits of code · scale (one f32 product, rounded to nearest even): what the GPU's
// dequantize writes. codes any shape kF8E4M3 -> bf16 of the same shape.
Tensor dequantize_tensor_to_bf16(const Tensor& codes, float scale);

// The FP8 attention's fixed scales besides the operands'. P = exp(score - running max) lies in
// [0, 1], so it is quantized as a tensor of amax 1 (448 is its largest code). O is a convex
// combination of V's rows, so |O| <= amax(V) up to P's rounding; it is quantized as a tensor of
// amax 2 · amax(V), one binade of headroom that costs nothing in e4m3's relative precision.
inline constexpr float kAttentionPAmax = 1.0f;
inline float attention_output_amax(float v_amax) { return 2.0f * v_amax; }

}  // namespace orochi
