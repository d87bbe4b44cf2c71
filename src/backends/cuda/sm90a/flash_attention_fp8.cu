// FP8 flash attention for Hopper (sm_90a), head dim 128, non-causal, from the pre-pass's e4m3
// codes (core/attention_fp8_layout.h), bf16 out. The schedule is flash_attention.cu's (the bf16
// kernel; read its header first): a producer warpgroup streams 128-key K and V^T tiles by TMA
// through a ring of stages, two consumer warpgroups of 64 query rows each take turns issuing
// their MMAs (ping-pong) and rescale lazily. What differs:
//   - both GEMMs are wgmma m64n128k32 e4m3 (k = 32 bytes per step, 4 steps per 128-byte row):
//     S = Q K^T with both operands K-major in shared memory, O += P V^T^T with P from registers
//     and V^T (keys contiguous) as the K-major B operand;
//   - every tile is one 128 x 128-byte TMA box, exactly one 128-byte swizzle row per tile row;
//   - the scores of key tile j are scaled by log2(e)/sqrt(128) · q_scale · k_scale[j] inside the
//     softmax (one scalar per tile), O's column d by v_scale[d] at the end;
//   - P = exp2(x - max + 4) is quantized to e4m3 straight from the accumulator fragment: V^T's
//     keys are permuted so that order is the A fragment's (the layout header says why);
//   - the row sums add the f32 exponentials (not their e4m3 roundings), or (kMmaSums) come from a
//     wgmma m64n8k32 of P against a constant all-ones tile: the sums of P's e4m3 codes, the very
//     weights P V uses, with no per-score add (a fresh accumulator per key tile, added in f32);
//   - P V is summed per group of kPromoteEvery key tiles in a fresh accumulator and each group added
//     to O in f32 registers (Hopper's FP8 MMA accumulator keeps ~14 bits and truncates: over hundreds
//     of tiles its error grows linearly), or (0) accumulated in O directly;
//   - no split of a sparse last wave (the bf16 kernel's split tail is left out here).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/sm90a/flash_attention_fp8_launch.h"
#include "backends/cuda/sm90a/flash_common.cuh"
#include "backends/cuda/sm90a/launch_helpers.h"
#include "backends/cuda/sm90a/wgmma.cuh"
#include "backends/cuda/sm90a/wgmma_fp8.cuh"
#include "core/attention_fp8_layout.h"

namespace orochi::cuda::sm90a {
namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockM = 128;  // query rows per CTA (64 per consumer warpgroup)
constexpr int kBlockN = 128;  // keys per tile
constexpr int kStages = 4;
constexpr int kThreads = 384;
constexpr int kConsumerWarps = 8;
constexpr uint32_t kTileBytes = 128 * 128;  // 128 rows of 128 e4m3 codes: Q, a K tile or a V^T tile

// Shared memory from a 1024-byte aligned base: Q | K stages | V^T stages | ones | barriers. `ones`:
// one 128-byte swizzle atom (8 rows x 128 bytes) of e4m3 1.0, the B operand of the mma row sums.
struct Layout {
  static constexpr uint32_t kQ = 0;
  static constexpr uint32_t kK = kTileBytes;
  static constexpr uint32_t kV = kK + kStages * kTileBytes;
  static constexpr uint32_t kOnes = kV + kStages * kTileBytes;
  static constexpr uint32_t kOnesBytes = 1024;
  static constexpr uint32_t kBarriers = kOnes + kOnesBytes;
  static constexpr uint32_t kSharedBytes = kBarriers + 8 * (1 + 4 * kStages) + 1024;  // + alignment slack
  static_assert(kTileBytes % 1024 == 0);
  static_assert(kOnes % 1024 == 0);  // a whole swizzle atom: the B descriptors' base offset is 0
  static_assert(kSharedBytes <= 227 * 1024);
};

// Two e4m3 codes (cvt.rn.satfinite: core/fp8.h's rounding), `lo` in the low byte.
__device__ __forceinline__ uint32_t pack_e4m3x2(float lo, float hi) {
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
}

// Turns raw scores s (code dot products of one tile) into exp2(s * scale - max + kPOffset) in
// place, with scale = log2(e)/sqrt(128) · q_scale · k_scale[tile]; updates the running max (and,
// unless kMmaSums, the sums) and returns the factors the output so far must be scaled by. Columns >= valid_cols (the
// last tile's padding) are masked out. The max moves only when a tile's exceeds it by more than
// kLazyRescaleThreshold, so P <= 2^(threshold + offset) = 256, inside e4m3's 448.
template <bool kMmaSums>
__device__ __forceinline__ void online_softmax(float (&s)[64], RowState& st, float scale, int valid_cols, int lane,
                                               float& factor0, float& factor1) {
  if (valid_cols < kBlockN) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int col = 8 * i + 2 * (lane & 3);
      if (col >= valid_cols) s[4 * i] = s[4 * i + 2] = -INFINITY;
      if (col + 1 >= valid_cols) s[4 * i + 1] = s[4 * i + 3] = -INFINITY;
    }
  }
  float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    m0 = fmaxf(m0, fmaxf(s[4 * i], s[4 * i + 1]));
    m1 = fmaxf(m1, fmaxf(s[4 * i + 2], s[4 * i + 3]));
  }
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {  // the 4 threads of a row
    m0 = fmaxf(m0, __shfl_xor_sync(0xffffffff, m0, offset));
    m1 = fmaxf(m1, __shfl_xor_sync(0xffffffff, m1, offset));
  }
  // scale > 0, so the max of the scaled scores is the scaled max. -inf + the threshold stays
  // -inf: the first tile always sets the max.
  const float tile0 = m0 * scale, tile1 = m1 * scale;
  const float new0 = tile0 > st.max0 + fp8_attention::kLazyRescaleThreshold ? tile0 : st.max0;
  const float new1 = tile1 > st.max1 + fp8_attention::kLazyRescaleThreshold ? tile1 : st.max1;
  factor0 = exp2_approx(st.max0 - new0);  // 0 on the first tile (max was -inf), 1 when it held
  factor1 = exp2_approx(st.max1 - new1);
  st.max0 = new0;
  st.max1 = new1;
  const float bias0 = fp8_attention::kPOffset - new0, bias1 = fp8_attention::kPOffset - new1;
  float sum0 = 0, sum1 = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    s[4 * i] = exp2_approx(fmaf(s[4 * i], scale, bias0));
    s[4 * i + 1] = exp2_approx(fmaf(s[4 * i + 1], scale, bias0));
    s[4 * i + 2] = exp2_approx(fmaf(s[4 * i + 2], scale, bias1));
    s[4 * i + 3] = exp2_approx(fmaf(s[4 * i + 3], scale, bias1));
    if constexpr (!kMmaSums) {
      sum0 += s[4 * i] + s[4 * i + 1];
      sum1 += s[4 * i + 2] + s[4 * i + 3];
    }
  }
  if constexpr (!kMmaSums) {  // with kMmaSums the loop adds the tile's sums when its P V is in
    st.sum0 = st.sum0 * factor0 + sum0;
    st.sum1 = st.sum1 * factor1 + sum1;
  }
}

// P (e4m3) as the A operand of the PV wgmma: k-step kc covers keys 32kc..32kc+31 of the tile,
// i.e. the scores s[16kc .. 16kc+15]; register `reg` of that step packs the four scores
// fp8_attention::score_in_register(reg, 0..3) (V^T's key permutation makes that the right order).
__device__ __forceinline__ void scores_to_operand(const float (&s)[64], uint32_t (&p)[16]) {
#pragma unroll
  for (int kc = 0; kc < 4; ++kc) {
#pragma unroll
    for (int reg = 0; reg < 4; ++reg) {
      const float* c = s + 16 * kc;
      const uint32_t lo = pack_e4m3x2(c[fp8_attention::score_in_register(reg, 0)], c[fp8_attention::score_in_register(reg, 1)]);
      const uint32_t hi = pack_e4m3x2(c[fp8_attention::score_in_register(reg, 2)], c[fp8_attention::score_in_register(reg, 3)]);
      p[4 * kc + reg] = lo | (hi << 16);
    }
  }
}

// S[64 x 128] = Q[64 x 128] K[128 x 128]^T: 4 k-steps of 32 head dims (32 bytes) inside the
// 128-byte swizzled rows of both tiles.
__device__ __forceinline__ void issue_qk(float (&s)[64], uint32_t q_addr, uint32_t k_addr) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    wgmma_m64n128k32_e4m3_ss(s, sw128_descriptor(q_addr + kk * 32, 16, 1024), sw128_descriptor(k_addr + kk * 32, 16, 1024),
                             kk > 0 ? 1 : 0);
}

// O[64 x 128] (+)= P[64 x 128 keys] V[128 keys x 128]: 4 k-steps of 32 keys (32 bytes of each V^T
// row). accumulate = false starts from zero (the first tile of a promoted group).
__device__ __forceinline__ void issue_pv(float (&o)[64], const uint32_t (&p)[16], uint32_t vt_addr, bool accumulate) {
#pragma unroll
  for (int kc = 0; kc < 4; ++kc) {
    const uint32_t(&a)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&p[4 * kc]);
    wgmma_m64n128k32_e4m3_rs(o, a, sw128_descriptor(vt_addr + kc * 32, 16, 1024), accumulate || kc > 0 ? 1 : 0);
  }
}

// Row sums of P (its e4m3 codes) for one key tile into a fresh accumulator: every column of `sums`
// holds its row's sum, so sums[0] is row r's and sums[2] row r + 8's, already over the whole row
// (the MMA reduces across the quad).
__device__ __forceinline__ void issue_sums(float (&sums)[4], const uint32_t (&p)[16], uint32_t ones_addr) {
#pragma unroll
  for (int kc = 0; kc < 4; ++kc) {
    const uint32_t(&a)[4] = *reinterpret_cast<const uint32_t(*)[4]>(&p[4 * kc]);
    wgmma_m64n8k32_e4m3_rs(sums, a, sw128_descriptor(ones_addr + kc * 32, 16, 1024), kc > 0 ? 1 : 0);
  }
}

__device__ __forceinline__ void add_tile(float (&o)[64], const float (&tile)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] += tile[i];
}

// Work unit = 128 query rows of one head (blockIdx.x: head-major, so the CTAs resident together
// share a head's K and V^T in L2).
struct KernelParams {
  __nv_bfloat16* out;
  const float *q_scale, *k_scale, *v_scale;
  int s_q, s_kv, heads, q_tiles, k_tiles;
  float scale_log2;
};

template <bool kPingPong, int kPromoteEvery, bool kMmaSums>
__global__ void __launch_bounds__(kThreads, 1)
    flash_attention_fp8_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                               const __grid_constant__ CUtensorMap tm_vt, const KernelParams prm) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t raw_shared[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw_shared) + 1023) & ~uintptr_t{1023});
  using L = Layout;
  FlashBarriers<kStages>& bar = *reinterpret_cast<FlashBarriers<kStages>*>(smem + L::kBarriers);
  const int warpgroup = threadIdx.x / 128;
  const int unit = static_cast<int>(blockIdx.x);
  const int head = unit / prm.q_tiles;
  const int q_tile = unit % prm.q_tiles;
  const int row0 = q_tile * kBlockM;
  const int tiles = prm.k_tiles;

  if (threadIdx.x == 0) bar.init(kConsumerWarps);
  if constexpr (kMmaSums) {  // the all-ones B tile, written once, then handed to the async proxy
    if (threadIdx.x < Layout::kOnesBytes / 4) reinterpret_cast<uint32_t*>(smem + L::kOnes)[threadIdx.x] = 0x38383838u;
    fence_proxy_async_shared();
  }
  __syncthreads();

  if (warpgroup == 0) {  // producer
    registers_shrink<24>();
    if (threadIdx.x == 0) {
      mbarrier_arrive_expect_bytes(&bar.q_full, kTileBytes);
      tma_load_2d(smem + L::kQ, &tm_q, &bar.q_full, 0, head * prm.q_tiles * kBlockM + row0);
      for (int j = 0; j < tiles; ++j) {
        const int s = j % kStages;
        const uint32_t parity = (j / kStages) & 1;
        if (j >= kStages) mbarrier_wait(&bar.k_empty[s], parity ^ 1);
        mbarrier_arrive_expect_bytes(&bar.k_full[s], kTileBytes);
        tma_load_2d(smem + L::kK + s * kTileBytes, &tm_k, &bar.k_full[s], 0, (head * tiles + j) * kBlockN);
        if (j >= kStages) mbarrier_wait(&bar.v_empty[s], parity ^ 1);
        mbarrier_arrive_expect_bytes(&bar.v_full[s], kTileBytes);
        tma_load_2d(smem + L::kV + s * kTileBytes, &tm_vt, &bar.v_full[s], j * kBlockN, head * kHeadDim);
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
  const uint32_t ones_addr = smem_address(smem + L::kOnes);
  const int my_turn = 1 + wg, their_turn = 2 - wg;  // named barrier ids (0 is __syncthreads)
  const int last_cols = prm.s_kv - (tiles - 1) * kBlockN;  // valid columns of the final key tile
  const float row_scale = prm.scale_log2 * prm.q_scale[head * prm.q_tiles + q_tile];
  const float* k_scale = prm.k_scale + head * tiles;

  float s_acc[64], o_acc[64];
  constexpr bool kPromote = kPromoteEvery > 0;
  constexpr int kGroup = kPromote ? kPromoteEvery : 1;  // a divisor even when unused
  float o_tile[kPromote ? 64 : 1];  // the current group's P V
  float p_sums[4] = {0.f, 0.f, 0.f, 0.f};  // kMmaSums: one key tile's row sums
  uint32_t p[16];
#pragma unroll
  for (int i = 0; i < 64; ++i) o_acc[i] = 0.f;
#pragma unroll
  for (int i = 0; i < (kPromote ? 64 : 1); ++i) o_tile[i] = 0.f;  // overwritten (scale-d 0), but never read undefined
  RowState st;
  float f0, f1;

  if (kPingPong && wg == 1) named_barrier_arrive(1, 256);  // warpgroup 0 goes first
  float scale = row_scale * k_scale[0];
  mbarrier_wait(&bar.q_full, 0);

  // Tile 0: scores and softmax only.
  mbarrier_wait(&bar.k_full[0], 0);
  if (kPingPong) named_barrier_sync(my_turn, 256);
  wgmma_fence();
  issue_qk(s_acc, q_addr, k_addr);
  wgmma_commit();
  if (kPingPong) named_barrier_arrive(their_turn, 256);
  wgmma_wait<0>();
  pin_registers(s_acc);
  if (lane == 0) mbarrier_arrive(&bar.k_empty[0]);
  online_softmax<kMmaSums>(s_acc, st, scale, tiles == 1 ? last_cols : kBlockN, lane, f0, f1);
  scores_to_operand(s_acc, p);

  for (int j = 1; j < tiles; ++j) {
    const int s = j % kStages, prev = (j - 1) % kStages;
    scale = row_scale * k_scale[j];
    mbarrier_wait(&bar.k_full[s], (j / kStages) & 1);
    mbarrier_wait(&bar.v_full[prev], ((j - 1) / kStages) & 1);
    if (kPingPong) named_barrier_sync(my_turn, 256);
    wgmma_fence();
    issue_qk(s_acc, q_addr, k_addr + s * kTileBytes);
    wgmma_commit();
    // Key tile j - 1's P V: it opens a group (fresh accumulator) or joins the open one.
    const bool group_ends = kPromote && (j - 1) % kGroup == kGroup - 1;
    if constexpr (kPromote) {
      issue_pv(o_tile, p, v_addr + prev * kTileBytes, (j - 1) % kGroup != 0);
    } else {
      issue_pv(o_acc, p, v_addr + prev * kTileBytes, true);
    }
    if constexpr (kMmaSums) issue_sums(p_sums, p, ones_addr);
    wgmma_commit();
    if (kPingPong) named_barrier_arrive(their_turn, 256);
    wgmma_wait<1>();  // the scores of tile j are in
    pin_registers(s_acc);
    if (lane == 0) mbarrier_arrive(&bar.k_empty[s]);
    online_softmax<kMmaSums>(s_acc, st, scale, j == tiles - 1 ? last_cols : kBlockN, lane, f0, f1);
    wgmma_wait<0>();  // P(j-1) V(j-1) is in
    pin_registers(p);
    if constexpr (kPromote) {
      pin_registers(o_tile);
      if (group_ends) {
        add_tile(o_acc, o_tile);
      } else {  // the open group continues at tile j's max, like O
        rescale_output(o_tile, f0, f1);
      }
    } else {
      pin_registers(o_acc);
    }
    if constexpr (kMmaSums) {  // tile j-1's sums at tile j-1's max, then moved to tile j's as O is
      pin_registers(p_sums);
      st.sum0 = (st.sum0 + p_sums[0]) * f0;
      st.sum1 = (st.sum1 + p_sums[2]) * f1;
    }
    if (lane == 0) mbarrier_arrive(&bar.v_empty[prev]);
    rescale_output(o_acc, f0, f1);
    scores_to_operand(s_acc, p);
  }

  const int last = (tiles - 1) % kStages;
  mbarrier_wait(&bar.v_full[last], ((tiles - 1) / kStages) & 1);
  if (kPingPong) named_barrier_sync(my_turn, 256);
  wgmma_fence();
  if constexpr (kPromote) {
    issue_pv(o_tile, p, v_addr + last * kTileBytes, (tiles - 1) % kGroup != 0);
  } else {
    issue_pv(o_acc, p, v_addr + last * kTileBytes, true);
  }
  if constexpr (kMmaSums) issue_sums(p_sums, p, ones_addr);
  wgmma_commit();
  // Warpgroup 1 owes no turn after its last MMAs: both barriers end balanced.
  if (kPingPong && wg == 0) named_barrier_arrive(their_turn, 256);
  wgmma_wait<0>();
  if constexpr (kPromote) {
    pin_registers(o_tile);
    add_tile(o_acc, o_tile);
  } else {
    pin_registers(o_acc);
  }

  float sum0 = st.sum0, sum1 = st.sum1;
  if constexpr (kMmaSums) {  // the MMA summed over the whole row already
    pin_registers(p_sums);
    sum0 += p_sums[0];
    sum1 += p_sums[2];
  } else {
#pragma unroll
    for (int offset = 1; offset < 4; offset *= 2) {
      sum0 += __shfl_xor_sync(0xffffffff, sum0, offset);
      sum1 += __shfl_xor_sync(0xffffffff, sum1, offset);
    }
  }
  const float inv0 = 1.f / sum0, inv1 = 1.f / sum1;
  const int local = wg * 64 + warp * 16 + (lane >> 2);  // this thread's rows: local, local + 8
  const int r = row0 + local;
  const int64_t row_stride = static_cast<int64_t>(prm.heads) * kHeadDim;
  const float* v_scale = prm.v_scale + head * kHeadDim + 2 * (lane & 3);
  __nv_bfloat16* o0 = prm.out + static_cast<int64_t>(r) * row_stride + head * kHeadDim + 2 * (lane & 3);
  __nv_bfloat16* o1 = o0 + 8 * row_stride;
#pragma unroll
  for (int i = 0; i < 16; ++i) {  // columns 8i + 2(lane % 4) + {0, 1}
    const float2 vs = *reinterpret_cast<const float2*>(v_scale + 8 * i);
    if (r < prm.s_q)
      *reinterpret_cast<uint32_t*>(o0 + 8 * i) = pack_bf16(o_acc[4 * i] * (vs.x * inv0), o_acc[4 * i + 1] * (vs.y * inv0));
    if (r + 8 < prm.s_q)
      *reinterpret_cast<uint32_t*>(o1 + 8 * i) =
          pack_bf16(o_acc[4 * i + 2] * (vs.x * inv1), o_acc[4 * i + 3] * (vs.y * inv1));
  }
#else
  __trap();  // built without sm_90a code: the host side never launches this
#endif
}

template <bool kPingPong, int kPromoteEvery, bool kMmaSums>
cudaError_t launch(const FlashAttentionFp8Launch& l, cudaStream_t stream) {
  constexpr uint32_t kSharedBytes = Layout::kSharedBytes;
  if (cudaError_t e =
          opt_in_shared_memory<flash_attention_fp8_kernel<kPingPong, kPromoteEvery, kMmaSums>>(static_cast<int>(kSharedBytes));
      e != cudaSuccess)
    return e;
  const int q_tiles = (l.s_q + kBlockM - 1) / kBlockM, k_tiles = (l.s_kv + kBlockN - 1) / kBlockN;
  KernelParams prm{static_cast<__nv_bfloat16*>(l.o), l.q_scale, l.k_scale, l.v_scale, l.s_q, l.s_kv, l.heads,
                   q_tiles, k_tiles, static_cast<float>(fp8_attention::kScoreScaleLog2)};
  flash_attention_fp8_kernel<kPingPong, kPromoteEvery, kMmaSums>
      <<<static_cast<unsigned>(q_tiles) * static_cast<unsigned>(l.heads), kThreads, kSharedBytes, stream>>>(l.q, l.k, l.vt,
                                                                                                          prm);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_flash_attention_fp8(const FlashAttentionFp8Launch& l, cudaStream_t stream) {
  if (l.s_q <= 0 || l.s_kv <= 0 || l.heads <= 0 || l.o == nullptr || l.q_scale == nullptr || l.k_scale == nullptr ||
      l.v_scale == nullptr)
    return cudaErrorInvalidValue;
  // The mma row sums are built for the ping-pong schedule (the one the engine runs).
  if (l.mma_sums && !l.pingpong) return cudaErrorInvalidValue;
  // Without ping-pong (a timing baseline) only promotion per tile or none.
  if (!l.pingpong) {
    if (l.promote_every == 1) return launch<false, 1, false>(l, stream);
    if (l.promote_every == 0) return launch<false, 0, false>(l, stream);
    return cudaErrorInvalidValue;
  }
  switch (l.promote_every) {
    case 0: return l.mma_sums ? launch<true, 0, true>(l, stream) : launch<true, 0, false>(l, stream);
    case 1: return l.mma_sums ? launch<true, 1, true>(l, stream) : launch<true, 1, false>(l, stream);
    case 2: return l.mma_sums ? launch<true, 2, true>(l, stream) : launch<true, 2, false>(l, stream);
    case 4: return l.mma_sums ? launch<true, 4, true>(l, stream) : launch<true, 4, false>(l, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace orochi::cuda::sm90a
