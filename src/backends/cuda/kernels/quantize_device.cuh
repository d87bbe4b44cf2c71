// Device pieces of per-row quantization, shared by quantize_rows (quantize.cu) and the kernels that
// quantize the rows they produce (rms_norm.cu, swiglu_quantized.cu): one definition of the scale,
// the inverse and each code, so a fused kernel's codes are those quantize_rows gives for the same
// bf16 row, bit for bit. What they compute is core/quantize.h's and core/fp8.h's definition.
#pragma once

#include <cuda_fp8.h>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/quantize_kernels.h"

namespace orochi::cuda::kernels {

constexpr float kMinRowAmax = 1e-12f;  // core/quantize.h's kMinAmax

template <QuantCode Code>
constexpr float quant_max() {
  return Code == QuantCode::kI8 ? 127.0f : (Code == QuantCode::kE4M3 ? 448.0f : 57344.0f);
}

// The saturating round-to-nearest-even code of v (int8: clamped to [-127, 127], NaN -> 0).
template <QuantCode Code>
__device__ __forceinline__ uint8_t encode_code(float v) {
  if constexpr (Code == QuantCode::kE4M3) {
    return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
  } else if constexpr (Code == QuantCode::kE5M2) {
    return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
  } else {
    // cvt.rni gives 0 for NaN; clamping the integer (not the float, where fmaxf would turn NaN
    // into the bound) keeps that.
    const int i = __float2int_rn(v);
    return static_cast<uint8_t>(static_cast<int8_t>(i < -127 ? -127 : (i > 127 ? 127 : i)));
  }
}

// V codes; 8 and 4 are one 8- or 4-byte store (p aligned to that).
template <int V>
__device__ __forceinline__ void store_codes(uint8_t* p, const uint8_t (&c)[V]) {
  if constexpr (V == 8) {
    uint2 raw;
    raw.x = c[0] | (c[1] << 8) | (c[2] << 16) | (static_cast<uint32_t>(c[3]) << 24);
    raw.y = c[4] | (c[5] << 8) | (c[6] << 16) | (static_cast<uint32_t>(c[7]) << 24);
    *reinterpret_cast<uint2*>(p) = raw;
  } else if constexpr (V == 4) {
    *reinterpret_cast<uint32_t*>(p) = c[0] | (c[1] << 8) | (c[2] << 16) | (static_cast<uint32_t>(c[3]) << 24);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = c[i];
  }
}

// The codes of V values v · inverse, stored at p.
template <QuantCode Code, int V>
__device__ __forceinline__ void store_encoded(uint8_t* p, const float (&v)[V], float inverse) {
  uint8_t q[V];
#pragma unroll
  for (int j = 0; j < V; ++j) q[j] = encode_code<Code>(v[j] * inverse);
  store_codes<V>(p, q);
}

// The largest value over the block (blockDim.x a multiple of 32); every thread gets it. fmaxf
// ignores NaN, as core's std::fmax does; max is order-free, so any split of a row over threads
// gives the same amax. A block that reduces again must __syncthreads() first (shared partials).
__device__ __forceinline__ float block_max(float v) {
  __shared__ float partial[32];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float m = lane < warps ? partial[lane] : 0.0f;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  return m;
}

// A row's scale (written by the caller) and the inverse its codes use, from its amax.
struct RowScale {
  float scale;
  float inverse;
};
template <QuantCode Code>
__device__ __forceinline__ RowScale row_scale(float amax) {
  const float a = fmaxf(amax, kMinRowAmax);
  return {a / quant_max<Code>(), quant_max<Code>() / a};  // IEEE divisions (no fast-math), as the host's
}

}  // namespace orochi::cuda::kernels
