// bf16 GEMM for Hopper (sm_90a): y = x w^T (+ bias), fp32 accumulation, with a plain or a SwiGLU
// epilogue. Persistent and warp-specialized:
//   - warpgroup 0 is the producer: one thread walks this CTA's tiles and streams their 64-wide K
//     blocks of x (128 rows) and w (2 x 64 rows) with TMA into a 6-stage ring;
//   - warpgroups 1 and 2 take the CTA's tiles in turn (tile i goes to warpgroup i % 2), and their
//     main loops take turns too (named barriers): one warpgroup's MMAs run while the other does
//     its epilogue, so the tensor cores do not wait for the stores. The turns also keep each
//     warpgroup's mbarrier waits in step with the ring: waiting by parity on a stage two passes
//     ahead of it would pass at once.
// A tile is 128 x 128 outputs; its w rows come as two boxes of 64, which lets the SwiGLU epilogue
// take 64 value rows and the matching 64 gate rows (I rows further) into one tile.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/sm90a/gemm_launch.h"
#include "backends/cuda/sm90a/launch_helpers.h"
#include "backends/cuda/sm90a/wgmma.cuh"

namespace orochi::cuda::sm90a {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 64;
constexpr int kStages = 6;
constexpr int kThreads = 384;
constexpr int kConsumerWarps = 4;  // one warpgroup consumes a given stage
constexpr uint32_t kATileBytes = kBM * kBK * 2;  // 128 rows of 128 bytes
constexpr uint32_t kBHalfBytes = 64 * kBK * 2;   // 64 rows of 128 bytes
constexpr uint32_t kStageBytes = kATileBytes + 2 * kBHalfBytes;
constexpr uint32_t kBarrierOffset = kStages * kStageBytes;
constexpr uint32_t kSharedBytes = kBarrierOffset + 8 * 2 * kStages + 1024;  // + alignment slack
constexpr int kGroupM = 8;  // tiles walk 8 row blocks at a time: their x and w stay in L2

struct Params {
  __nv_bfloat16* y;
  const __nv_bfloat16* bias;
  int64_t y_stride;
  int M, N, K;
  int m_tiles, n_tiles;
  bool swiglu;
};

// Tile t -> (row block, column block), grouped by kGroupM row blocks.
__device__ __forceinline__ void tile_coords(int t, const Params& p, int& m_block, int& n_block) {
  const int group_size = kGroupM * p.n_tiles;
  const int first_m = (t / group_size) * kGroupM;
  const int rows = min(kGroupM, p.m_tiles - first_m);
  const int within = t % group_size;
  m_block = first_m + within % rows;
  n_block = within / rows;
}

// The two 64-row boxes of w for a column block: adjacent for the plain epilogue; value rows 64j
// and gate rows I + 64j for SwiGLU.
__device__ __forceinline__ void w_rows(const Params& p, int n_block, int& lo, int& hi) {
  if (p.swiglu) {
    lo = n_block * 64;
    hi = p.N / 2 + n_block * 64;
  } else {
    lo = n_block * kBN;
    hi = lo + 64;
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tm_x, const __grid_constant__ CUtensorMap tm_w, const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t raw_shared[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw_shared) + 1023) & ~uintptr_t{1023});
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBarrierOffset);
  uint64_t* empty = full + kStages;
  const int warpgroup = threadIdx.x / 128;
  const int tiles = p.m_tiles * p.n_tiles;
  const int k_blocks = (p.K + kBK - 1) / kBK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], kConsumerWarps);
    }
    mbarrier_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {  // producer
    registers_shrink<24>();
    if (threadIdx.x == 0) {
      int64_t n = 0;  // K blocks loaded so far: stage n % kStages, pass n / kStages
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int m_block, n_block, lo, hi;
        tile_coords(t, p, m_block, n_block);
        w_rows(p, n_block, lo, hi);
        for (int kb = 0; kb < k_blocks; ++kb, ++n) {
          const int s = static_cast<int>(n % kStages);
          if (n >= kStages) mbarrier_wait(&empty[s], static_cast<uint32_t>((n / kStages) & 1) ^ 1);
          uint8_t* stage = smem + s * kStageBytes;
          mbarrier_arrive_expect_bytes(&full[s], kStageBytes);
          tma_load_2d(stage, &tm_x, &full[s], kb * kBK, m_block * kBM);
          tma_load_2d(stage + kATileBytes, &tm_w, &full[s], kb * kBK, lo);
          tma_load_2d(stage + kATileBytes + kBHalfBytes, &tm_w, &full[s], kb * kBK, hi);
        }
      }
    }
    return;
  }

  // Consumers: warpgroup c takes this CTA's tiles c, c + 2, ...
  registers_grow<240>();
  const int c = warpgroup - 1;
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
  const uint32_t base = smem_address(smem);
  float acc[2][64];  // rows [64 h, 64 h + 64) of the tile, all 128 columns
  int i = c;         // index of the tile in this CTA's list
  const int my_turn = 1 + c, their_turn = 2 - c;  // named barrier ids (0 is __syncthreads)
  if (c == 1) named_barrier_arrive(1, 256);        // warpgroup 0 goes first
  for (int t = blockIdx.x + c * gridDim.x; t < tiles; t += 2 * gridDim.x, i += 2) {
    int64_t n = static_cast<int64_t>(i) * k_blocks;
    int prev = -1;
    named_barrier_sync(my_turn, 256);
    for (int kb = 0; kb < k_blocks; ++kb, ++n) {
      const int s = static_cast<int>(n % kStages);
      mbarrier_wait(&full[s], static_cast<uint32_t>((n / kStages) & 1));
      const uint32_t a = base + s * kStageBytes, b = a + kATileBytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const uint64_t db = sw128_descriptor(b + kk * 32, 16, 1024);
#pragma unroll
        for (int h = 0; h < 2; ++h)
          wgmma_m64n128k16_ss(acc[h], sw128_descriptor(a + h * 64 * 128 + kk * 32, 16, 1024), db,
                              kb > 0 || kk > 0 ? 1 : 0);
      }
      wgmma_commit();
      if (prev >= 0) {
        wgmma_wait<1>();  // the previous block's MMAs are done with its stage
        if (lane == 0) mbarrier_arrive(&empty[prev]);
      }
      prev = s;
    }
    if (t + static_cast<int>(gridDim.x) < tiles) named_barrier_arrive(their_turn, 256);  // their next tile
    wgmma_wait<0>();
    pin_registers(acc[0]);
    pin_registers(acc[1]);
    if (lane == 0) mbarrier_arrive(&empty[prev]);

    // Epilogue: thread (warp w, lane l) holds rows 64h + 16w + l/4 (+ 8) and, per n8 block j,
    // columns 8j + 2(l % 4) + {0, 1}.
    int m_block, n_block, lo, hi;
    tile_coords(t, p, m_block, n_block);
    w_rows(p, n_block, lo, hi);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int half_row = 0; half_row < 2; ++half_row) {
        const int r = m_block * kBM + 64 * h + 16 * warp + (lane >> 2) + 8 * half_row;
        if (r >= p.M) continue;
        __nv_bfloat16* yr = p.y + static_cast<int64_t>(r) * p.y_stride;
        if (!p.swiglu) {
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            const int col = (j < 8 ? lo : hi - 64) + 8 * j + 2 * (lane & 3);  // lo + 8j for both halves
            if (col >= p.N) continue;
            float v0 = acc[h][4 * j + 2 * half_row], v1 = acc[h][4 * j + 2 * half_row + 1];
            if (p.bias != nullptr) {
              v0 += __bfloat162float(p.bias[col]);
              v1 += __bfloat162float(p.bias[col + 1]);
            }
            *reinterpret_cast<__nv_bfloat162*>(yr + col) = __floats2bfloat162_rn(v0, v1);
          }
        } else {
          const int I = p.N / 2;
#pragma unroll
          for (int j = 0; j < 8; ++j) {  // value block j, gate block j + 8
            const int col = lo + 8 * j + 2 * (lane & 3);
            if (col >= I) continue;
            float v[2], g[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              v[e] = acc[h][4 * j + 2 * half_row + e];
              g[e] = acc[h][4 * (j + 8) + 2 * half_row + e];
              if (p.bias != nullptr) {
                v[e] += __bfloat162float(p.bias[col + e]);
                g[e] += __bfloat162float(p.bias[I + col + e]);
              }
              v[e] = kernels::round_bf16(v[e]) * kernels::round_bf16(kernels::silu_f32(kernels::round_bf16(g[e])));
            }
            *reinterpret_cast<__nv_bfloat162*>(yr + col) = __floats2bfloat162_rn(v[0], v[1]);
          }
        }
      }
    }
  }
#else
  __trap();  // built without sm_90a code: the host side never launches this
#endif
}

}  // namespace

cudaError_t launch_gemm(const GemmLaunch& l, cudaStream_t stream) {
  if (l.M <= 0 || l.N <= 0 || l.K <= 0 || l.sm_count <= 0 || l.y == nullptr) return cudaErrorInvalidValue;
  if (cudaError_t e = opt_in_shared_memory<gemm_kernel>(static_cast<int>(kSharedBytes)); e != cudaSuccess) return e;
  const bool swiglu = l.epilogue == GemmEpilogue::kSwiGLU;
  Params p{static_cast<__nv_bfloat16*>(l.y), static_cast<const __nv_bfloat16*>(l.bias), l.y_stride, l.M, l.N, l.K,
           (l.M + kBM - 1) / kBM, swiglu ? (l.N / 2 + 63) / 64 : (l.N + kBN - 1) / kBN, swiglu};
  const int tiles = p.m_tiles * p.n_tiles;
  gemm_kernel<<<std::min(tiles, l.sm_count), kThreads, kSharedBytes, stream>>>(l.x, l.w, p);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::sm90a
