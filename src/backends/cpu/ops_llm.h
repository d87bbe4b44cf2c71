// CPU ops of decoder-only language models (Qwen3-VL's text stack, MiniMax-H3's conditioner): token
// embedding lookup, the SwiGLU product, causal grouped-query attention and interleaved multi-axis
// RoPE tables. Same conventions as ops.h: fp32, contiguous, fp32 accumulation.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backends/cpu/ops.h"
#include "core/tensor.h"

namespace orochi::cpu {

// out[i] = table[ids[i]] in f32. table [V, C] of any float dtype (a bf16 checkpoint view is read in
// place, only the rows asked for are converted); ids i64 [n] with values in [0, V) -> f32 [n, C].
Tensor embedding_lookup(const Tensor& table, const Tensor& ids);

// silu(gate) · up, elementwise (the LLaMA/Qwen MLP: down(silu(gate(x)) · up(x))). Same shapes.
Tensor silu_mul(const Tensor& gate, const Tensor& up);

// Causal softmax attention with grouped key/value heads: query head h reads kv head h / (Hq / Hkv),
// row i attends to rows j <= i, scale 1/sqrt(D).
// q [S, Hq, D], k and v [S, Hkv, D], Hq a multiple of Hkv -> [S, Hq, D].
Tensor causal_attention_gqa(const Tensor& q, const Tensor& k, const Tensor& v);

// Interleaved M-RoPE (Qwen3-VL): which position axis (0 t, 1 h, 2 w) drives each of the F frequency
// slots. Axis a in {1, 2} takes slots a, a+3, a+6, ... below min(3 · section[a], F); t takes the rest.
// section[0] is not read, as in the reference. [24, 20, 20] on 64 slots: h 1,4,…,58, w 2,5,…,59.
std::vector<int> mrope_interleaved_axes(int64_t freq_slots, const std::array<int64_t, 3>& section);

// Rotary table for cpu::apply_rope over a whole head (rotate-half, R = 2F = head_dim):
//   angle[s, f] = positions[s, axis(f)] · inv_freq[f], cos/sin [S, 2F] = [cos(angle) | cos(angle)].
// positions i64 [S, 3] (t, h, w); inv_freq f32 [F]. Equal axes reduce it to plain 1-D RoPE.
RopeTable mrope_interleaved_table(const Tensor& positions, const Tensor& inv_freq,
                                  const std::array<int64_t, 3>& section);

}  // namespace orochi::cpu
