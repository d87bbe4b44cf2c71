// Launchers of the per-tensor quantization kernels (quantize_tensor.cu), the operands of cuDNN's
// FP8 attention: raw pointers, shapes and a stream. Bit for bit what core/quantize_tensor.h
// computes: x [rows, C] bf16 seen with an optional per-column f32 offset (value = x - offset[c],
// one f32 subtraction), the tensor's amax of |value|, the scale max(amax, 1e-12) / 448 and its
// inverse 448 / max(amax, 1e-12) (IEEE divisions), each code the saturating round-to-nearest-even
// e4m3 of value · inverse (cvt.rn.satfinite). C must be a multiple of 8 and every pointer 16-byte
// aligned (one 16-byte load per 8 values); otherwise cudaErrorInvalidValue, nothing launched.
// Each returns the launch's cudaGetLastError().
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// mean [C] f32 = column means of x [rows, C]: f32 sums over tiles of `tile_rows` rows (row by row)
// into partial [ceil(rows / tile_rows), C], then over the tiles in order, then / rows.
cudaError_t launch_column_means_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, int64_t tile_rows,
                                     float* partial, float* mean, cudaStream_t stream);

// *amax = max |x - offset| over the tensor (offset [C] or null). Zeroes *amax first (on `stream`).
cudaError_t launch_tensor_amax_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, const float* offset,
                                    float* amax, cudaStream_t stream);

// codes [rows, C] e4m3 of x - offset with the scale of *amax (a device value, written by
// launch_tensor_amax_bf16 on the same stream); *scale = max(*amax, 1e-12) / 448.
cudaError_t launch_encode_tensor_e4m3_bf16(const __nv_bfloat16* x, int64_t rows, int64_t C, const float* offset,
                                           const float* amax, uint8_t* codes, float* scale, cudaStream_t stream);

// y [n] bf16 = bf16(e4m3 value of codes[i] · *scale), n a multiple of 8.
cudaError_t launch_decode_tensor_e4m3_to_bf16(const uint8_t* codes, int64_t n, const float* scale,
                                              __nv_bfloat16* y, cudaStream_t stream);

// The FP8 attention's fixed scales (core/quantize_tensor.h): P as a tensor of amax 1 and O as one
// of amax 2 · *v_amax when O is e4m3 (fp8_output), else O's scale 1. Writes descale_s, scale_s,
// scale_o and descale_o (one f32 each) from one thread.
cudaError_t launch_attention_fp8_scales(const float* v_amax, bool fp8_output, float* descale_s, float* scale_s,
                                        float* scale_o, float* descale_o, cudaStream_t stream);

}  // namespace orochi::cuda::kernels
