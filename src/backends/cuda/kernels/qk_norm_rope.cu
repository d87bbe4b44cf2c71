// Per-head RMSNorm of q or k fused with rotate-half RoPE, in place. One warp per head.
// The general kernel walks the head element by element; H3's head_dim 128 gets kernels where
// each lane owns 4 adjacent channels (one 8-byte access) and fetches its rotation partner's
// channels from the lane half/4 away with a shuffle: one block per sequence row (the default), or
// one warp per (row, head) (`--set qk-norm=items`, or rows beyond the grid's x limit).

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float rotate_first(float a, float b, float cos_i, float sin_i) {
  return round_bf16(a * cos_i) - round_bf16(b * sin_i);  // bf16(a·cos) + bf16(−b·sin); rounded by the store
}
__device__ __forceinline__ float rotate_second(float b, float a, float cos_i, float sin_i) {
  return round_bf16(b * cos_i) + round_bf16(a * sin_i);
}

// bf16(x·inv·w) (diffusers' H3), or bf16(bf16(x·inv)·w) (transformers' Qwen3 q/k norm).
__device__ __forceinline__ float norm_weight(float x, float inv, float w, bool round_first) {
  return round_first ? round_bf16(round_bf16(x * inv) * w) : round_bf16(x * inv * w);
}

__global__ void qk_norm_rope_any(bf16* __restrict__ x, const bf16* __restrict__ w, int64_t rows, int64_t heads,
                                 int D, float eps, const bf16* __restrict__ cos, const bf16* __restrict__ sin,
                                 int R, bool round_first) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together, so the shuffles below stay full-warp
  bf16* xr = x + row * D;
  const int64_t s = row / heads;

  float sum = 0.0f;
  for (int c = lane; c < D; c += 32) {
    const float v = __bfloat162float(xr[c]);
    sum += v * v;
  }
  // The shuffles also order every lane's reads above before any lane's writes below.
  const float inv = rsqrtf(warp_sum(sum) / static_cast<float>(D) + eps);
  auto normed = [&](int c) { return norm_weight(__bfloat162float(xr[c]), inv, __bfloat162float(w[c]), round_first); };

  // Each lane owns the pairs (p, p + R/2) it writes, so reads and writes of one pair stay in one thread.
  const int half = R / 2;
  for (int p = lane; p < half; p += 32) {
    const float a = normed(p), b = normed(p + half);
    const bf16* cr = cos + s * R;
    const bf16* sr = sin + s * R;
    xr[p] = __float2bfloat16_rn(rotate_first(a, b, __bfloat162float(cr[p]), __bfloat162float(sr[p])));
    xr[p + half] = __float2bfloat16_rn(
        rotate_second(b, a, __bfloat162float(cr[p + half]), __bfloat162float(sr[p + half])));
  }
  for (int c = R + lane; c < D; c += 32) xr[c] = __float2bfloat16_rn(normed(c));
}

__device__ __forceinline__ void load4(const bf16* p, float (&v)[4]) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
  const float2 lo = __bfloat1622float2(pairs[0]), hi = __bfloat1622float2(pairs[1]);
  v[0] = lo.x, v[1] = lo.y, v[2] = hi.x, v[3] = hi.y;
}

// D == 128, R % 8 == 0: lane l holds channels 4l..4l+3; channel i < R/2 pairs with i + R/2, which
// lives in lane l + R/8 at the same position.
struct RopeLane {
  int c0;              // first channel of the lane
  bool first, second;  // rotates as the first / second half of a pair (neither: channels >= R)
  int partner;         // the lane holding the other half
};
__device__ __forceinline__ RopeLane rope_lane(int lane, int R) {
  const int c0 = 4 * lane, half = R / 2, lane_offset = half / 4;
  const bool first = c0 < half, second = !first && c0 < R;
  return {c0, first, second, first ? lane + lane_offset : (second ? lane - lane_offset : lane)};
}

// One head of 128 channels at xr (already offset by the lane's c0), in place: the lane's part of
// the RMSNorm with weights wv, then RoPE with its cos/sin channels cv, sv. The whole warp calls it.
__device__ __forceinline__ void norm_rope_head_128(bf16* xr, const float (&wv)[4], const float (&cv)[4],
                                                   const float (&sv)[4], const RopeLane& l, float eps,
                                                   bool round_first) {
  constexpr int D = 128;
  float v[4];
  load4(xr, v);
  const float inv = rsqrtf(warp_sum(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]) / D + eps);
  float n[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) n[i] = norm_weight(v[i], inv, wv[i], round_first);
  float other[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) other[i] = __shfl_sync(0xffffffffu, n[i], l.partner);
  float out[4] = {n[0], n[1], n[2], n[3]};
  if (l.first || l.second) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      out[i] = l.first ? rotate_first(n[i], other[i], cv[i], sv[i]) : rotate_second(n[i], other[i], cv[i], sv[i]);
  }
  uint2 raw;
  __nv_bfloat162* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
  pairs[0] = __floats2bfloat162_rn(out[0], out[1]);
  pairs[1] = __floats2bfloat162_rn(out[2], out[3]);
  *reinterpret_cast<uint2*>(xr) = raw;
}

// The lane's weight channels, and its cos/sin channels of sequence position s (zeros when it
// does not rotate): what both kernels below load before norm_rope_head_128.
__device__ __forceinline__ void load_lane_tables(const bf16* w, const bf16* cos, const bf16* sin, int64_t s, int R,
                                                 const RopeLane& l, float (&wv)[4], float (&cv)[4], float (&sv)[4]) {
  load4(w + l.c0, wv);
  for (int i = 0; i < 4; ++i) cv[i] = sv[i] = 0.0f;
  if (l.first || l.second) {
    load4(cos + s * R + l.c0, cv);
    load4(sin + s * R + l.c0, sv);
  }
}

// One warp per (row, head) item.
__global__ void qk_norm_rope_128(bf16* __restrict__ x, const bf16* __restrict__ w, int64_t rows, int64_t heads,
                                 float eps, const bf16* __restrict__ cos, const bf16* __restrict__ sin, int R,
                                 bool round_first) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const RopeLane l = rope_lane(lane, R);
  float wv[4], cv[4], sv[4];
  load_lane_tables(w, cos, sin, row / heads, R, l, wv, cv, sv);
  norm_rope_head_128(x + row * 128 + l.c0, wv, cv, sv, l, eps, round_first);
}

// One block per sequence row: its warps take the row's heads in turn (w, w + 8, ...) and load
// their lanes' weights and cos/sin channels once for all of them, where the kernel above reads
// the tables again for every head (as many bytes as x itself). The same bits. Reading more heads
// ahead did not pay: one head ahead ran at 0.155 ms against 0.152, 8 heads up front cost registers
// and occupancy and ran at 0.195 (bench/RESULTS.md, sessions 8 and 9).
__global__ void qk_norm_rope_rows_128(bf16* __restrict__ x, const bf16* __restrict__ w, int64_t heads, float eps,
                                      const bf16* __restrict__ cos, const bf16* __restrict__ sin, int R,
                                      bool round_first) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t s = blockIdx.x;
  const RopeLane l = rope_lane(lane, R);
  float wv[4], cv[4], sv[4];
  load_lane_tables(w, cos, sin, s, R, l, wv, cv, sv);
  bf16* row = x + s * heads * 128 + l.c0;
  for (int64_t h = warp; h < heads; h += kWarpsPerBlock)  // warp-uniform: the shuffles stay full-warp
    norm_rope_head_128(row + h * 128, wv, cv, sv, l, eps, round_first);
}

bool aligned8(const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; }

}  // namespace

cudaError_t launch_qk_norm_rope(bf16* x, const bf16* w, int64_t S, int64_t heads, int64_t D, float eps,
                                const bf16* cos, const bf16* sin, int64_t R, cudaStream_t stream,
                                bool round_before_weight, bool items_kernel) {
  const int64_t rows = S * heads;
  if (rows == 0 || D == 0) return cudaSuccess;
  if ((rows + kWarpsPerBlock - 1) / kWarpsPerBlock > kMaxGridX) return cudaErrorInvalidConfiguration;
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const bool table_aligned = R == 0 || (aligned8(cos) && aligned8(sin));
  const bool lanes_of_4 = D == 128 && R % 8 == 0 && aligned8(x) && aligned8(w) && table_aligned;
  if (lanes_of_4 && !items_kernel && S <= kMaxGridX)
    qk_norm_rope_rows_128<<<static_cast<unsigned>(S), 32 * kWarpsPerBlock, 0, stream>>>(
        x, w, heads, eps, cos, sin, static_cast<int>(R), round_before_weight);
  else if (lanes_of_4)
    qk_norm_rope_128<<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(x, w, rows, heads, eps, cos, sin,
                                                                  static_cast<int>(R), round_before_weight);
  else
    qk_norm_rope_any<<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(x, w, rows, heads, static_cast<int>(D), eps, cos,
                                                                  sin, static_cast<int>(R), round_before_weight);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels
