// Device helpers shared by the elementwise and norm kernels: bf16 rounding, 16-byte vector loads
// and stores of bf16, and warp/block sums. Only CUDA headers: no framework code in kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace orochi::cuda::kernels {

using bf16 = __nv_bfloat16;

// What a PyTorch bf16 op keeps of an fp32 result: round to nearest even, back to fp32.
__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

// PyTorch's CUDA silu: x / (1 + exp(-x)) in fp32 (accurate expf, not __expf).
__device__ __forceinline__ float silu_f32(float v) { return v / (1.0f + expf(-v)); }

// V consecutive bf16 values to fp32 registers. V == 8 is one 16-byte load (p 16-byte aligned);
// other V load element by element (the fallback for odd widths and unaligned views).
template <int V>
__device__ __forceinline__ void load_bf16(const bf16* p, float (&v)[V]) {
  if constexpr (V == 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(pairs[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = __bfloat162float(p[i]);
  }
}

// fp32 registers rounded (nearest even) to V consecutive bf16 values; V == 8 is one 16-byte store.
template <int V>
__device__ __forceinline__ void store_bf16(bf16* p, const float (&v)[V]) {
  if constexpr (V == 8) {
    uint4 raw;
    __nv_bfloat162* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) pairs[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = __float2bfloat16_rn(v[i]);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
// Uses static shared memory per `Slot`: a kernel that reduces twice passes another Slot the second
// time, so no warp overwrites partials the first reduction is still reading.
template <int Slot = 0>
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float total = lane < warps ? partial[lane] : 0.0f;
  total = warp_sum(total);  // every warp reduces the partials itself: no second barrier needed
  return total;
}

// The largest gridDim.x a launch may use.
constexpr int64_t kMaxGridX = 2147483647;

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Threads for a row of `units` work items: a multiple of 32, at most 256.
inline int row_threads(int64_t units) {
  const int64_t t = (units + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : (t > 256 ? 256 : t));
}

// Grid-stride loops: the first item of this thread, and the step to its next one.
__device__ __forceinline__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Blocks for a grid-stride loop over `units` items with 256 threads: enough to fill the GPU, capped
// so huge tensors loop instead of launching millions of blocks.
inline unsigned grid_blocks(int64_t units) {
  const int64_t b = (units + 255) / 256;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

}  // namespace orochi::cuda::kernels
