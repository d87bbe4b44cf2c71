// The FP8 attention's quantized operands (issue 25), one definition for the CPU reference
// (backends/cpu/attention_fp8.h) and the sm_90a kernel and its pre-pass
// (backends/cuda/sm90a/flash_attention_fp8*.cu). Head dim 128, e4m3 codes rounded as core/fp8.h,
// scales as core/quantize.h's row_scale (max(amax, kMinAmax) / 448, inverse 448 / that).
//
// Per head h, from q [S_q, H, 128], k and v [S_kv, H, 128]:
//  - Q codes [H, q_tiles * 128, 128]: one scale per (head, 128-row query tile);
//  - K codes [H, k_tiles * 128, 128] of k - mean_h (mean over all keys, per channel; subtracting a
//    per-head vector shifts every score of a query row by the same constant, so the softmax is
//    unchanged, and the keys' shared channel bias of DiTs stops eating the e4m3 range), one scale
//    per (head, 128-key tile);
//  - V^T codes [H, 128 (channel d), k_tiles * 128 (keys)], one scale per (head, channel): the
//    scale multiplies O's column d at the end. Inside each chunk of 32 keys the columns are
//    permuted (key_of_column below) so the kernel's P fragment feeds the PV MMA without shuffles.
// Padding rows/keys (beyond S_q or S_kv) hold code 0, never garbage (0 * NaN would poison O).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define OROCHI_FP8_ATTN_HD __host__ __device__
#else
#define OROCHI_FP8_ATTN_HD
#endif

namespace orochi::fp8_attention {

inline constexpr int kHeadDim = 128;
inline constexpr int kTile = 128;  // query rows per Q scale, keys per K scale (the kernel's tiles)
inline constexpr int kChunk = 32;  // keys per k-step of the e4m3 PV MMA (wgmma m64nNk32)

OROCHI_FP8_ATTN_HD constexpr int64_t tiles(int64_t rows) { return (rows + kTile - 1) / kTile; }

// Which key (inside its 32-key chunk) V^T's column `kappa` (inside the same chunk) holds.
// Why: after S = Q K^T (wgmma accumulator, PTX ISA "wgmma .m64nNk16/32 register fragment layout
// for accumulator D") a thread with q = lane % 4 holds, per 32-column chunk, the score columns
// [2q, 2q+1, 8+2q, 9+2q] and [16+2q, 17+2q, 24+2q, 25+2q] of its two rows. The e4m3 A operand of
// wgmma m64nNk32 in registers wants, per row, the k slots [4q..4q+3] (register a0-a3 / a4-a7) and
// [16+4q..16+4q+3] (a8-a11 / a12-a15), the layout of mma.m16n8k32's 8-bit A fragment
// (col = 4 * threadID_in_group + (i & 3), + 16 for i >= 8). Packing the thread's scores in their
// natural order into those slots computes sum_kappa P[key_of_column(kappa)] V^T[kappa], which is
// P V when V^T's column kappa holds key key_of_column(kappa):
//   kappa = 4q + j      -> j < 2 ? 2q + j : 8 + 2q + (j - 2)
//   kappa = 16 + 4q + j -> 16 + the same
OROCHI_FP8_ATTN_HD constexpr int key_of_column(int kappa) {
  const int half = kappa & 16, q = (kappa & 15) >> 2, j = kappa & 3;
  return half + (j < 2 ? 2 * q + j : 8 + 2 * q + (j - 2));
}

// The kernel packs P of one 32-key chunk (its 16 scores s[0..15] of that chunk, in the accumulator's
// order: s[4i + e] is row r (e < 2) or r + 8, column 8i + 2q + (e & 1)) into the four A registers
// of the PV MMA: byte b of register `reg` (rows r, r + 8, r, r + 8; k slots 4q + b, 4q + b, 16 + 4q + b,
// 16 + 4q + b) is s[score_in_register(reg, b)]: registers 0/1 take n8 blocks 0 and 1 of the
// chunk, 2/3 blocks 2 and 3.
OROCHI_FP8_ATTN_HD constexpr int score_in_register(int reg, int byte) {
  return (reg >> 1) * 8 + (reg & 1) * 2 + (byte >> 1) * 4 + (byte & 1);
}

// The pieces of the device workspace, in bytes from its start, each 256-byte aligned.
struct Fp8AttentionLayout {
  int64_t heads = 0, s_q = 0, s_kv = 0, q_tiles = 0, k_tiles = 0;
  int64_t q_codes = 0, k_codes = 0, vt_codes = 0;  // [H, q_tiles*128, 128], [H, k_tiles*128, 128], [H, 128, k_tiles*128]
  int64_t q_scale = 0, k_scale = 0;                // f32 [H, q_tiles], [H, k_tiles]
  int64_t v_scale = 0, v_inverse = 0, k_mean = 0;  // f32 [H, 128] each
  int64_t k_sum_partial = 0, v_amax_partial = 0;   // f32 [H, k_tiles, 128] each: the pre-pass's scratch
  int64_t bytes = 0;
};

constexpr int64_t align256(int64_t n) { return (n + 255) / 256 * 256; }

constexpr Fp8AttentionLayout fp8_attention_layout(int64_t heads, int64_t s_q, int64_t s_kv) {
  Fp8AttentionLayout l;
  l.heads = heads;
  l.s_q = s_q;
  l.s_kv = s_kv;
  l.q_tiles = tiles(s_q);
  l.k_tiles = tiles(s_kv);
  int64_t at = 0;
  auto take = [&at](int64_t n) {
    const int64_t here = at;
    at += align256(n);
    return here;
  };
  l.q_codes = take(heads * l.q_tiles * kTile * kHeadDim);
  l.k_codes = take(heads * l.k_tiles * kTile * kHeadDim);
  l.vt_codes = take(heads * kHeadDim * l.k_tiles * kTile);
  l.q_scale = take(heads * l.q_tiles * 4);
  l.k_scale = take(heads * l.k_tiles * 4);
  l.v_scale = take(heads * kHeadDim * 4);
  l.v_inverse = take(heads * kHeadDim * 4);
  l.k_mean = take(heads * kHeadDim * 4);
  l.k_sum_partial = take(heads * l.k_tiles * kHeadDim * 4);
  l.v_amax_partial = take(heads * l.k_tiles * kHeadDim * 4);
  l.bytes = at;
  return l;
}

// P = exp2(score - running max + kPOffset) is quantized to e4m3 with no scale. The kernel's lazy
// running max lags the true one by at most kLazyRescaleThreshold (log2 units), so P <= 2^(4 + 4) =
// 256 < 448 (no saturation), and the offset lifts the small probabilities of flat rows 2^4 further
// above e4m3's subnormals (min normal 2^-6) than P <= 1 would. The row sums carry the same 2^4,
// which cancels in O / sum.
inline constexpr float kPOffset = 4.f;
inline constexpr float kLazyRescaleThreshold = 4.f;

// log2(e) / sqrt(128): softmax's 1/sqrt(d) in exp2 units; both sides round it to f32 and multiply
// it by q_scale, then by k_scale[tile], in that order.
inline constexpr double kScoreScaleLog2 = 1.4426950408889634074 / 11.313708498984760390;

}  // namespace orochi::fp8_attention

#undef OROCHI_FP8_ATTN_HD
