// The FP8 attention's pre-pass: bf16 q, k, v -> e4m3 codes and f32 scales in the workspace layout
// of core/attention_fp8_layout.h, bit for bit what backends/cpu/attention_fp8.cpp computes. Every
// reduction has a fixed order (a thread per channel walks its tile's rows; tiles in order), the
// scales are core/quantize.h's row_scale (IEEE divisions; this library builds without fast math),
// and the codes are cvt.rn.satfinite.e4m3 (core/fp8.h's rounding). Memory-bound and small next to
// the attention (reads q once and k, v twice).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "backends/cuda/sm90a/flash_attention_fp8_launch.h"
#include "core/attention_fp8_layout.h"

namespace orochi::cuda::sm90a {
namespace {

using fp8_attention::Fp8AttentionLayout;
using fp8_attention::kHeadDim;
using fp8_attention::kTile;

constexpr float kE4M3Max = 448.f;
constexpr float kMinAmax = 1e-12f;  // core/quantize.h's kMinAmax

struct Params {
  const __nv_bfloat16 *q, *k, *v;
  uint8_t* ws;
  Fp8AttentionLayout l;
  int heads;
};

__device__ __forceinline__ float* floats(const Params& p, int64_t offset) {
  return reinterpret_cast<float*>(p.ws + offset);
}
// Element (row, head, c) of a [S, heads, 128] bf16 tensor.
__device__ __forceinline__ float load(const __nv_bfloat16* x, int64_t row, int head, int heads, int c) {
  return __bfloat162float(x[(row * heads + head) * kHeadDim + c]);
}
__device__ __forceinline__ int64_t first_past(int64_t rows, int64_t tile_end) { return rows < tile_end ? rows : tile_end; }
__device__ __forceinline__ uint8_t e4m3(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }

// The largest value over the block's 128 threads; every thread gets it (fmaxf ignores NaN, as the
// host's std::fmax does).
__device__ __forceinline__ float block_max(float v) {
  __shared__ float partial[4];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  return fmaxf(fmaxf(partial[0], partial[1]), fmaxf(partial[2], partial[3]));
}

// Grid (k_tiles, heads), a thread per channel: k's sum and v's amax over the tile's keys.
__global__ void __launch_bounds__(kHeadDim) kv_tile_stats(const Params p) {
  const int t = blockIdx.x, h = blockIdx.y, c = threadIdx.x;
  const int64_t end = first_past(p.l.s_kv, static_cast<int64_t>(t + 1) * kTile);
  float sum = 0.f, amax = 0.f;
  for (int64_t r = static_cast<int64_t>(t) * kTile; r < end; ++r) {
    sum += load(p.k, r, h, p.heads, c);
    amax = fmaxf(amax, fabsf(load(p.v, r, h, p.heads, c)));
  }
  const int64_t at = (static_cast<int64_t>(h) * p.l.k_tiles + t) * kHeadDim + c;
  floats(p, p.l.k_sum_partial)[at] = sum;
  floats(p, p.l.v_amax_partial)[at] = amax;
}

// Grid heads, a thread per channel: k's mean and v's channel scale over the tiles, in tile order.
__global__ void __launch_bounds__(kHeadDim) kv_reduce(const Params p) {
  const int h = blockIdx.x, c = threadIdx.x;
  float sum = 0.f, amax = 0.f;
  for (int64_t t = 0; t < p.l.k_tiles; ++t) {
    const int64_t at = (h * p.l.k_tiles + t) * kHeadDim + c;
    sum += floats(p, p.l.k_sum_partial)[at];
    amax = fmaxf(amax, floats(p, p.l.v_amax_partial)[at]);
  }
  floats(p, p.l.k_mean)[h * kHeadDim + c] = sum / static_cast<float>(p.l.s_kv);
  const float a = fmaxf(amax, kMinAmax);
  floats(p, p.l.v_scale)[h * kHeadDim + c] = a / kE4M3Max;
  floats(p, p.l.v_inverse)[h * kHeadDim + c] = kE4M3Max / a;
}

// Grid (tiles, heads), a thread per channel: one 128-row tile of q (kKeys false) or of k - mean
// (kKeys true) -> its scale and codes; rows past the sequence get code 0.
template <bool kKeys>
__global__ void __launch_bounds__(kHeadDim) quantize_rows_tile(const Params p) {
  const int t = blockIdx.x, h = blockIdx.y, c = threadIdx.x;
  const __nv_bfloat16* x = kKeys ? p.k : p.q;
  const int64_t rows = kKeys ? p.l.s_kv : p.l.s_q, tiles = kKeys ? p.l.k_tiles : p.l.q_tiles;
  const float mean = kKeys ? floats(p, p.l.k_mean)[h * kHeadDim + c] : 0.f;
  const int64_t begin = static_cast<int64_t>(t) * kTile, end = first_past(rows, begin + kTile);
  float amax = 0.f;
  for (int64_t r = begin; r < end; ++r) amax = fmaxf(amax, fabsf(load(x, r, h, p.heads, c) - mean));
  const float a = fmaxf(block_max(amax), kMinAmax);
  const float inverse = kE4M3Max / a;
  if (c == 0) floats(p, kKeys ? p.l.k_scale : p.l.q_scale)[h * tiles + t] = a / kE4M3Max;
  uint8_t* codes = p.ws + (kKeys ? p.l.k_codes : p.l.q_codes) + (h * tiles * kTile + begin) * kHeadDim + c;
  for (int64_t r = begin; r < begin + kTile; ++r)
    codes[(r - begin) * kHeadDim] = r < end ? e4m3((load(x, r, h, p.heads, c) - mean) * inverse) : uint8_t{0};
}

// Grid (k_tiles, heads): one 128-key tile of v -> V^T codes [128 channels][128 keys], keys
// permuted inside each 32-key chunk (fp8_attention::key_of_column); padding keys get code 0.
__global__ void __launch_bounds__(kHeadDim) quantize_vt_tile(const Params p) {
  __shared__ uint8_t tile[kHeadDim][kTile + 4];  // [channel][key]; +4 spreads the rows over banks
  const int t = blockIdx.x, h = blockIdx.y, c = threadIdx.x;
  const int64_t begin = static_cast<int64_t>(t) * kTile;
  const float inverse = floats(p, p.l.v_inverse)[h * kHeadDim + c];
  for (int r = 0; r < kTile; ++r)
    tile[c][r] = begin + r < p.l.s_kv ? e4m3(load(p.v, begin + r, h, p.heads, c) * inverse) : uint8_t{0};
  __syncthreads();
  const int kappa = threadIdx.x;  // now a thread per V^T column
  const int key = kappa / fp8_attention::kChunk * fp8_attention::kChunk + fp8_attention::key_of_column(kappa % fp8_attention::kChunk);
  const int64_t keys = p.l.k_tiles * kTile;
  uint8_t* out = p.ws + p.l.vt_codes + static_cast<int64_t>(h) * kHeadDim * keys + begin + kappa;
  for (int d = 0; d < kHeadDim; ++d) out[d * keys] = tile[d][key];
}

}  // namespace

cudaError_t launch_attention_fp8_prepass(const AttentionFp8PrepassLaunch& l, cudaStream_t stream) {
  if (l.q == nullptr || l.k == nullptr || l.v == nullptr || l.workspace == nullptr || l.heads <= 0 || l.s_q <= 0 ||
      l.s_kv <= 0)
    return cudaErrorInvalidValue;
  const Params p{static_cast<const __nv_bfloat16*>(l.q), static_cast<const __nv_bfloat16*>(l.k),
                 static_cast<const __nv_bfloat16*>(l.v), l.workspace,
                 fp8_attention::fp8_attention_layout(l.heads, l.s_q, l.s_kv), l.heads};
  const dim3 key_grid(static_cast<unsigned>(p.l.k_tiles), static_cast<unsigned>(l.heads));
  const dim3 query_grid(static_cast<unsigned>(p.l.q_tiles), static_cast<unsigned>(l.heads));
  kv_tile_stats<<<key_grid, kHeadDim, 0, stream>>>(p);
  kv_reduce<<<static_cast<unsigned>(l.heads), kHeadDim, 0, stream>>>(p);
  quantize_rows_tile<false><<<query_grid, kHeadDim, 0, stream>>>(p);
  quantize_rows_tile<true><<<key_grid, kHeadDim, 0, stream>>>(p);
  quantize_vt_tile<<<key_grid, kHeadDim, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::sm90a
