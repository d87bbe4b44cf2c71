// The FP8 attention on the CPU (issue 25): the pre-pass's quantization, bit for bit what the GPU
// pre-pass writes (core/attention_fp8_layout.h), and the attention computed from those codes, the
// reference the sm_90a FP8 kernel is tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "core/attention_fp8_layout.h"
#include "core/tensor.h"

namespace orochi::cpu {

// The GPU workspace's contents on the host: same layout, same bytes (alignment gaps are 0).
struct Fp8AttentionOperands {
  fp8_attention::Fp8AttentionLayout layout;
  std::vector<uint8_t> bytes;  // layout.bytes

  const uint8_t* at(int64_t offset) const { return bytes.data() + offset; }
  const float* floats(int64_t offset) const { return reinterpret_cast<const float*>(bytes.data() + offset); }
  // Code of key `key` (unpermuted index) of channel d of head h in V^T.
  uint8_t v_code(int64_t h, int64_t d, int64_t key) const;
};

// q [S_q, H, 128], k and v [S_kv, H, 128] f32 (the GPU reads bf16: pass bf16-representable
// values) -> codes and scales. The reductions run in the GPU's order (k's per-tile f32 sums, key
// tile by key tile, then over tiles in f32), so the mean and every code match the GPU's bits.
Fp8AttentionOperands quantize_attention_fp8(const Tensor& q, const Tensor& k, const Tensor& v);

// How the softmax denominators are summed: the unquantized exponentials (the kernel's default), or
// P's e4m3 codes (its mma row sums, fp8-attention-sums=mma).
enum class Fp8RowSums { kExponentials, kCodes };

// softmax(q k^T / sqrt(128)) v from the codes, in f32 (dot products of codes in double, exact):
// scores of tile j scaled by log2(e)/sqrt(128) · q_scale · k_scale[j], P = e4m3(exp2(x - the
// exact row max + kPOffset)), row sums of the unquantized exponentials (or of P's codes),
// O[:, d] = (Σ P v^T[d]) · v_scale[d] / sum. The GPU's online max lags (lazy rescaling), so its P rounds differently: it
// matches this within a tolerance, not bit for bit. Rows `rows` (all when empty) of heads
// `heads` -> f32 [rows, heads.size(), 128].
Tensor attention_fp8_emulated(const Fp8AttentionOperands& ops, const std::vector<int64_t>& heads,
                              const std::vector<int64_t>& rows = {}, Fp8RowSums sums = Fp8RowSums::kExponentials);

}  // namespace orochi::cpu
