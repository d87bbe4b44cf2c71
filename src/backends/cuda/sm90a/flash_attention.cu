// Flash attention for Hopper (sm_90a), head dim 128, bf16 in and out, fp32 softmax and
// accumulation. The design follows FlashAttention-3's forward:
//   - warpgroup 0 is the producer: one thread loads Q once and streams K and V tiles (128 rows
//     each) with TMA into a 2-stage ring guarded by "full" and "empty" mbarriers;
//   - warpgroups 1 and 2 each own 64 query rows: S = Q K^T with wgmma from shared memory, online
//     softmax in registers, O += P V with P straight from registers (the accumulator layout of S
//     is the A-operand layout of the next wgmma);
//   - inside a warpgroup, the QK^T of tile j runs while the PV of tile j-1 is issued behind it,
//     and the softmax of tile j overlaps that PV;
//   - across the two warpgroups ("ping-pong"), named barriers make one issue its MMAs while the
//     other does its softmax, so the tensor cores stay fed.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/sm90a/flash_attention_launch.h"
#include "backends/cuda/sm90a/flash_common.cuh"
#include "backends/cuda/sm90a/launch_helpers.h"
#include "backends/cuda/sm90a/wgmma.cuh"

namespace orochi::cuda::sm90a {
namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockM = 128;  // query rows per CTA (64 per consumer warpgroup)
constexpr int kStages = 2;
constexpr int kThreads = 384;
constexpr int kConsumerWarps = 8;
constexpr float kLazyRescaleThreshold = 8.f;  // log2 units: exponentials of at most 2^8
constexpr uint32_t kRowBytes = kHeadDim * 2;              // one bf16 row of 128 head dims
constexpr uint32_t kQHalfBytes = kBlockM * kRowBytes / 2;  // 64 of the 128 columns: one TMA box

// Shared memory, from a 1024-byte aligned base: Q | K stages | V stages | barriers. kBlockN key
// rows per K or V tile: 128, 176 (FlashAttention-3's pick for head dim 128) or 192, the most that
// fits 227 KB of shared memory and the consumers' 240 registers (96 scores, 48 of P, 64 of O per
// thread, no spills): the fewest per-tile waits, turns and row reductions.
template <int kBlockN>
struct Layout {
  static constexpr uint32_t kTileBytes = kBlockN * kRowBytes;
  static constexpr uint32_t kHalfBytes = kTileBytes / 2;  // a multiple of the 1024-byte swizzle atom
  static constexpr uint32_t kQ = 0;
  static constexpr uint32_t kK = kBlockM * kRowBytes;
  static constexpr uint32_t kV = kK + kStages * kTileBytes;
  static constexpr uint32_t kBarriers = kV + kStages * kTileBytes;
  static constexpr uint32_t kSharedBytes = kBarriers + 8 * (1 + 4 * kStages) + 1024;  // + alignment slack
  static_assert(kHalfBytes % 1024 == 0);
  static_assert(kSharedBytes <= 227 * 1024);
};

// Turns scores s (raw q.k of one tile) into exp2(s * scale_log2 - max) in place, updates the
// running max and sums, and returns the factors the output accumulated so far must be scaled by.
// Columns >= valid_cols (the last tile's padding) are masked out.
// Without kLazy the max a row subtracts is its exact running max. With kLazy it only moves when a
// tile's max exceeds it by more than kLazyRescaleThreshold (log2 units): exponentials stay <= 2^8
// (no overflow in the f32 sums, no precision lost in bf16 P, whose exponent just shifts) and the
// output rescale, 64 multiplies per thread, is skipped on every tile that does not raise a row's
// max by that much (FlashAttention-4's conditional rescaling). The same softmax; other roundings.
template <int N, bool kLazy>
__device__ __forceinline__ void online_softmax(float (&s)[N / 2], RowState& st, float scale_log2, int valid_cols,
                                               int lane, float& factor0, float& factor1) {
  constexpr int kBlocks = N / 8;
  if (valid_cols < N) {
#pragma unroll
    for (int i = 0; i < kBlocks; ++i) {
      const int col = 8 * i + 2 * (lane & 3);
      if (col >= valid_cols) s[4 * i] = s[4 * i + 2] = -INFINITY;
      if (col + 1 >= valid_cols) s[4 * i + 1] = s[4 * i + 3] = -INFINITY;
    }
  }
  float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
  for (int i = 0; i < kBlocks; ++i) {
    m0 = fmaxf(m0, fmaxf(s[4 * i], s[4 * i + 1]));
    m1 = fmaxf(m1, fmaxf(s[4 * i + 2], s[4 * i + 3]));
  }
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {  // the 4 threads of a row
    m0 = fmaxf(m0, __shfl_xor_sync(0xffffffff, m0, offset));
    m1 = fmaxf(m1, __shfl_xor_sync(0xffffffff, m1, offset));
  }
  float new0, new1;
  if constexpr (kLazy) {  // -inf + the threshold stays -inf: the first tile always sets the max
    const float tile0 = m0 * scale_log2, tile1 = m1 * scale_log2;
    new0 = tile0 > st.max0 + kLazyRescaleThreshold ? tile0 : st.max0;
    new1 = tile1 > st.max1 + kLazyRescaleThreshold ? tile1 : st.max1;
  } else {
    new0 = fmaxf(st.max0, m0 * scale_log2);
    new1 = fmaxf(st.max1, m1 * scale_log2);
  }
  factor0 = exp2_approx(st.max0 - new0);  // 0 on the first tile (max was -inf), 1 when it held
  factor1 = exp2_approx(st.max1 - new1);
  st.max0 = new0;
  st.max1 = new1;
  float sum0 = 0, sum1 = 0;
#pragma unroll
  for (int i = 0; i < kBlocks; ++i) {
    s[4 * i] = exp2_approx(fmaf(s[4 * i], scale_log2, -new0));
    s[4 * i + 1] = exp2_approx(fmaf(s[4 * i + 1], scale_log2, -new0));
    s[4 * i + 2] = exp2_approx(fmaf(s[4 * i + 2], scale_log2, -new1));
    s[4 * i + 3] = exp2_approx(fmaf(s[4 * i + 3], scale_log2, -new1));
    sum0 += s[4 * i] + s[4 * i + 1];
    sum1 += s[4 * i + 2] + s[4 * i + 3];
  }
  st.sum0 = st.sum0 * factor0 + sum0;
  st.sum1 = st.sum1 * factor1 + sum1;
}

// P (bf16) as the A operand of the PV wgmma: k-step kk covers columns 16kk..16kk+15, i.e. n8
// blocks 2kk and 2kk+1 of the score accumulator.
template <int N>
__device__ __forceinline__ void scores_to_operand(const float (&s)[N / 2], uint32_t (&p)[N / 4]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) {
    const int lo = 8 * kk, hi = 8 * kk + 4;  // 4 * (2kk), 4 * (2kk + 1)
    p[4 * kk + 0] = pack_bf16(s[lo], s[lo + 1]);
    p[4 * kk + 1] = pack_bf16(s[lo + 2], s[lo + 3]);
    p[4 * kk + 2] = pack_bf16(s[hi], s[hi + 1]);
    p[4 * kk + 3] = pack_bf16(s[hi + 2], s[hi + 3]);
  }
}

// S[64 x N] = Q[64 x 128] K[N x 128]^T: 8 k-steps of 16 head dims (32 bytes) inside the two
// 64-column halves of both tiles.
template <int N>
__device__ __forceinline__ void issue_qk(float (&s)[N / 2], uint32_t q_addr, uint32_t k_addr) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const uint32_t within = (kk & 3) * 32;
    const uint64_t a = sw128_descriptor(q_addr + (kk >> 2) * kQHalfBytes + within, 16, 1024);
    const uint64_t b = sw128_descriptor(k_addr + (kk >> 2) * Layout<N>::kHalfBytes + within, 16, 1024);
    if constexpr (N == 128) {
      wgmma_m64n128k16_ss(s, a, b, kk > 0 ? 1 : 0);
    } else if constexpr (N == 176) {
      wgmma_m64n176k16_ss(s, a, b, kk > 0 ? 1 : 0);
    } else {
      static_assert(N == 192, "add the wgmma shape to wgmma.cuh");
      wgmma_m64n192k16_ss(s, a, b, kk > 0 ? 1 : 0);
    }
  }
}

// O[64 x 128] += P[64 x N] V[N x 128]: N/16 k-steps of 16 key rows (2048 bytes) of V, whose two
// 64-column halves are kHalfBytes apart.
template <int N>
__device__ __forceinline__ void issue_pv(float (&o)[64], const uint32_t (&p)[N / 4], uint32_t v_addr) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) {
    const uint32_t(&a)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&p[4 * kk]);
    wgmma_m64n128k16_rs_tb(o, a, sw128_descriptor(v_addr + kk * 2048, Layout<N>::kHalfBytes, 1024), 1);
  }
}

// Work unit u = 128 query rows of one head: head u / q_tiles, query tile u % q_tiles, so the CTAs
// resident together work on one head and share its K and V in L2. A CTA covers one unit, or with
// kv_splits > 1 one of that many slices of its key tiles, whose unnormalized output, row max and
// row sum go to `partial` for combine_splits. (A persistent variant, one CTA per SM walking the
// units round-robin, measured 2% slower at 1344x768: without the hardware's dynamic block
// scheduling, the slowest SM sets the end.)
struct KernelParams {
  __nv_bfloat16* out;
  float* partial;  // kv_splits > 1: kPartialFloats per CTA
  int s_q, s_kv, heads, q_tiles;
  int unit_begin, kv_splits;
  float scale_log2;
};
constexpr int kPartialFloats = kBlockM * kHeadDim + 2 * kBlockM;  // O [128][128], then (max, sum) per row

template <int kBlockN, bool kPingPong, bool kLazy>
__global__ void __launch_bounds__(kThreads, 1)
    flash_attention_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                           const __grid_constant__ CUtensorMap tm_v, const KernelParams prm) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t raw_shared[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw_shared) + 1023) & ~uintptr_t{1023});
  using L = Layout<kBlockN>;
  FlashBarriers<kStages>& bar = *reinterpret_cast<FlashBarriers<kStages>*>(smem + L::kBarriers);
  const int warpgroup = threadIdx.x / 128;
  const int s_q = prm.s_q, s_kv = prm.s_kv, heads = prm.heads;
  const float scale_log2 = prm.scale_log2;
  const int unit = prm.unit_begin + static_cast<int>(blockIdx.x) / prm.kv_splits;
  const int split = static_cast<int>(blockIdx.x) % prm.kv_splits;
  const int head = unit / prm.q_tiles;
  const int row0 = (unit % prm.q_tiles) * kBlockM;
  const int all_tiles = (s_kv + kBlockN - 1) / kBlockN;
  const int first_tile = split * all_tiles / prm.kv_splits;        // this CTA's key tiles:
  const int tiles = (split + 1) * all_tiles / prm.kv_splits - first_tile;  // [first_tile, +tiles)
  const bool ends_at_last = first_tile + tiles == all_tiles;        // holds the masked tile

  if (threadIdx.x == 0) bar.init(kConsumerWarps);
  __syncthreads();

  if (warpgroup == 0) {  // producer
    registers_shrink<24>();
    if (threadIdx.x == 0) {
      uint8_t* q = smem + L::kQ;
      mbarrier_arrive_expect_bytes(&bar.q_full, 2 * kQHalfBytes);
      tma_load_3d(q, &tm_q, &bar.q_full, 0, head, row0);
      tma_load_3d(q + kQHalfBytes, &tm_q, &bar.q_full, 64, head, row0);
      for (int j = 0; j < tiles; ++j) {
        const int s = j % kStages;
        const uint32_t parity = (j / kStages) & 1;
        uint8_t* k = smem + L::kK + s * L::kTileBytes;
        uint8_t* v = smem + L::kV + s * L::kTileBytes;
        if (j >= kStages) mbarrier_wait(&bar.k_empty[s], parity ^ 1);
        mbarrier_arrive_expect_bytes(&bar.k_full[s], L::kTileBytes);
        const int key_row = (first_tile + j) * kBlockN;
        tma_load_3d(k, &tm_k, &bar.k_full[s], 0, head, key_row);
        tma_load_3d(k + L::kHalfBytes, &tm_k, &bar.k_full[s], 64, head, key_row);
        if (j >= kStages) mbarrier_wait(&bar.v_empty[s], parity ^ 1);
        mbarrier_arrive_expect_bytes(&bar.v_full[s], L::kTileBytes);
        tma_load_3d(v, &tm_v, &bar.v_full[s], 0, head, key_row);
        tma_load_3d(v + L::kHalfBytes, &tm_v, &bar.v_full[s], 64, head, key_row);
      }
    }
    return;
  }

  // Consumers.
  registers_grow<240>();
  const int wg = warpgroup - 1;  // 0 or 1: query rows [64 wg, 64 wg + 64) of the tile
  const int lane = threadIdx.x & 31;
  const int warp = (threadIdx.x / 32) & 3;
  const uint32_t q_addr = smem_address(smem + L::kQ) + wg * 64 * 128;  // 64 rows of 128 bytes
  const uint32_t k_addr = smem_address(smem + L::kK), v_addr = smem_address(smem + L::kV);
  const int my_turn = 1 + wg, their_turn = 2 - wg;  // named barrier ids (0 is __syncthreads)
  const int last_cols = s_kv - (all_tiles - 1) * kBlockN;  // valid columns of the final key tile

  float s_acc[kBlockN / 2], o_acc[64];
  uint32_t p[kBlockN / 4];
#pragma unroll
  for (int i = 0; i < 64; ++i) o_acc[i] = 0.f;
  RowState st;
  float f0, f1;

  if (kPingPong && wg == 1) named_barrier_arrive(1, 256);  // warpgroup 0 goes first
  mbarrier_wait(&bar.q_full, 0);

  // Tile 0: scores and softmax only.
  mbarrier_wait(&bar.k_full[0], 0);
  if (kPingPong) named_barrier_sync(my_turn, 256);
  wgmma_fence();
  issue_qk<kBlockN>(s_acc, q_addr, k_addr);
  wgmma_commit();
  if (kPingPong) named_barrier_arrive(their_turn, 256);
  wgmma_wait<0>();
  pin_registers(s_acc);
  if (lane == 0) mbarrier_arrive(&bar.k_empty[0]);
  online_softmax<kBlockN, kLazy>(s_acc, st, scale_log2, tiles == 1 && ends_at_last ? last_cols : kBlockN, lane, f0,
                                 f1);
  scores_to_operand<kBlockN>(s_acc, p);

  for (int j = 1; j < tiles; ++j) {
    const int s = j % kStages, prev = (j - 1) % kStages;
    mbarrier_wait(&bar.k_full[s], (j / kStages) & 1);
    mbarrier_wait(&bar.v_full[prev], ((j - 1) / kStages) & 1);
    if (kPingPong) named_barrier_sync(my_turn, 256);
    wgmma_fence();
    issue_qk<kBlockN>(s_acc, q_addr, k_addr + s * L::kTileBytes);
    wgmma_commit();
    issue_pv<kBlockN>(o_acc, p, v_addr + prev * L::kTileBytes);
    wgmma_commit();
    if (kPingPong) named_barrier_arrive(their_turn, 256);
    wgmma_wait<1>();  // the scores of tile j are in
    pin_registers(s_acc);
    if (lane == 0) mbarrier_arrive(&bar.k_empty[s]);
    online_softmax<kBlockN, kLazy>(s_acc, st, scale_log2, j == tiles - 1 && ends_at_last ? last_cols : kBlockN, lane,
                                   f0, f1);
    wgmma_wait<0>();  // P(j-1) V(j-1) is in
    pin_registers(o_acc);
    pin_registers(p);
    if (lane == 0) mbarrier_arrive(&bar.v_empty[prev]);
    rescale_output(o_acc, f0, f1);
    scores_to_operand<kBlockN>(s_acc, p);
  }

  const int last = (tiles - 1) % kStages;
  mbarrier_wait(&bar.v_full[last], ((tiles - 1) / kStages) & 1);
  if (kPingPong) named_barrier_sync(my_turn, 256);
  wgmma_fence();
  issue_pv<kBlockN>(o_acc, p, v_addr + last * L::kTileBytes);
  wgmma_commit();
  // Warpgroup 1 owes no turn after its last MMAs: both barriers end balanced.
  if (kPingPong && wg == 0) named_barrier_arrive(their_turn, 256);
  wgmma_wait<0>();
  pin_registers(o_acc);

  float sum0 = st.sum0, sum1 = st.sum1;
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    sum0 += __shfl_xor_sync(0xffffffff, sum0, offset);
    sum1 += __shfl_xor_sync(0xffffffff, sum1, offset);
  }
  const int local = wg * 64 + warp * 16 + (lane >> 2);  // this thread's rows: local, local + 8
  if (prm.kv_splits > 1) {
    float* part = prm.partial + static_cast<int64_t>(blockIdx.x) * kPartialFloats;
    float* p0 = part + local * kHeadDim + 2 * (lane & 3);
    float* p1 = p0 + 8 * kHeadDim;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      *reinterpret_cast<float2*>(p0 + 8 * i) = make_float2(o_acc[4 * i], o_acc[4 * i + 1]);
      *reinterpret_cast<float2*>(p1 + 8 * i) = make_float2(o_acc[4 * i + 2], o_acc[4 * i + 3]);
    }
    if ((lane & 3) == 0) {
      float* stats = part + kBlockM * kHeadDim;
      *reinterpret_cast<float2*>(stats + 2 * local) = make_float2(st.max0, sum0);
      *reinterpret_cast<float2*>(stats + 2 * (local + 8)) = make_float2(st.max1, sum1);
    }
    return;
  }
  const float inv0 = 1.f / sum0, inv1 = 1.f / sum1;
  const int r = row0 + local;
  const int64_t row_stride = static_cast<int64_t>(heads) * kHeadDim;
  __nv_bfloat16* o0 = prm.out + static_cast<int64_t>(r) * row_stride + head * kHeadDim + 2 * (lane & 3);
  __nv_bfloat16* o1 = o0 + 8 * row_stride;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    if (r < s_q) *reinterpret_cast<uint32_t*>(o0 + 8 * i) = pack_bf16(o_acc[4 * i] * inv0, o_acc[4 * i + 1] * inv0);
    if (r + 8 < s_q)
      *reinterpret_cast<uint32_t*>(o1 + 8 * i) = pack_bf16(o_acc[4 * i + 2] * inv1, o_acc[4 * i + 3] * inv1);
  }
#else
  __trap();  // built without sm_90a code: the host side never launches this
#endif
}

// One block per (split unit, query row), one thread per head dim: the splits' outputs weighed by
// exp2(their max - the overall max), over the same weighing of their sums.
__global__ void combine_splits(KernelParams prm) {
  const int t = blockIdx.x, row = blockIdx.y, d = threadIdx.x;
  const int unit = prm.unit_begin + t;
  const int head = unit / prm.q_tiles, r = (unit % prm.q_tiles) * kBlockM + row;
  if (r >= prm.s_q) return;
  const float* first = prm.partial + static_cast<int64_t>(t) * prm.kv_splits * kPartialFloats;
  float overall = -INFINITY;
  for (int s = 0; s < prm.kv_splits; ++s)
    overall = fmaxf(overall, first[s * kPartialFloats + kBlockM * kHeadDim + 2 * row]);
  float num = 0, den = 0;
  for (int s = 0; s < prm.kv_splits; ++s) {
    const float* part = first + s * kPartialFloats;
    const float w = exp2_approx(part[kBlockM * kHeadDim + 2 * row] - overall);
    num += w * part[row * kHeadDim + d];
    den += w * part[kBlockM * kHeadDim + 2 * row + 1];
  }
  prm.out[static_cast<int64_t>(r) * prm.heads * kHeadDim + head * kHeadDim + d] = __float2bfloat16_rn(num / den);
}

template <int kBlockN, bool kPingPong, bool kLazy>
cudaError_t launch(const FlashAttentionLaunch& l, cudaStream_t stream) {
  constexpr uint32_t kSharedBytes = Layout<kBlockN>::kSharedBytes;
  if (cudaError_t e = opt_in_shared_memory<flash_attention_kernel<kBlockN, kPingPong, kLazy>>(static_cast<int>(kSharedBytes));
      e != cudaSuccess)
    return e;
  KernelParams prm{static_cast<__nv_bfloat16*>(l.o), l.partial, l.s_q, l.s_kv, l.heads,
                   (l.s_q + kBlockM - 1) / kBlockM, l.unit_begin, l.kv_splits,
                   static_cast<float>(M_LOG2E / std::sqrt(static_cast<double>(kHeadDim)))};
  flash_attention_kernel<kBlockN, kPingPong, kLazy><<<static_cast<unsigned>(l.units) * l.kv_splits, kThreads, kSharedBytes,
                                               stream>>>(l.q, l.k, l.v, prm);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess || l.kv_splits == 1) return e;
  combine_splits<<<dim3(l.units, kBlockM), kHeadDim, 0, stream>>>(prm);
  return cudaGetLastError();
}

template <int kBlockN>
cudaError_t launch_tile(const FlashAttentionLaunch& l, cudaStream_t stream) {
  if (l.pingpong) return l.lazy_rescale ? launch<kBlockN, true, true>(l, stream) : launch<kBlockN, true, false>(l, stream);
  return l.lazy_rescale ? launch<kBlockN, false, true>(l, stream) : launch<kBlockN, false, false>(l, stream);
}

}  // namespace

int flash_attention_partial_bytes() { return kPartialFloats * 4; }

cudaError_t launch_flash_attention(const FlashAttentionLaunch& l, cudaStream_t stream) {
  if (l.units <= 0 || l.kv_splits < 1 || (l.kv_splits > 1 && l.partial == nullptr)) return cudaErrorInvalidValue;
  // Every (tile, schedule, rescale) variant is its own instantiation, so the default's code is
  // what was measured whatever the switches add.
  switch (l.kv_block) {
    case 128: return launch_tile<128>(l, stream);
    case 176: return launch_tile<176>(l, stream);
    case 192: return launch_tile<192>(l, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace orochi::cuda::sm90a
