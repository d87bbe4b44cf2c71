// Attention inputs whose scores rise from one 128-key tile to the next by ~12.2 (log2 units), so an
// online softmax's running max moves on every key tile (the FP8 kernel's lazy max too: it moves
// when a tile beats it by more than fp8_attention::kLazyRescaleThreshold = 4). Channel 0 of every
// head carries the rise, set rather than added: q = 4 and k = 24 · (key / 128), the same for all
// keys of a tile, so e4m3's rounding of it shifts a whole tile's scores alike (no noise to straddle
// code boundaries) and the softmax inside the dominant last tile is as accurate as on plain inputs.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/tensor.h"

namespace orochi::testing {

inline constexpr float kRisingQ = 4.f, kRisingKPerTile = 24.f;
// 4 · 24 / sqrt(128) nats per tile, in log2 units.
inline double rising_scores_log2_per_tile() { return kRisingQ * kRisingKPerTile / std::sqrt(128.0) / std::log(2.0); }

// q [S_q, H, 128], k [S_kv, H, 128], f32. The values stay bf16-representable for fewer than 16 key
// tiles (24 · 15 = 360 has 6 significant bits).
inline void make_scores_rise_per_key_tile(Tensor& q, Tensor& k) {
  const int64_t H = q.dim(1), D = q.dim(2);
  for (int64_t i = 0; i < q.dim(0); ++i)
    for (int64_t h = 0; h < H; ++h) q.data<float>()[(i * H + h) * D] = kRisingQ;
  for (int64_t j = 0; j < k.dim(0); ++j)
    for (int64_t h = 0; h < H; ++h) k.data<float>()[(j * H + h) * D] = kRisingKPerTile * static_cast<float>(j / 128);
}

}  // namespace orochi::testing
