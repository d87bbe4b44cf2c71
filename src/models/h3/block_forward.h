// The stages of the CPU H3 forward shared by h3::forward (resident weights) and forward_streamed
// (blocks through staging slots), so both run the very same math: embed and pack, the AdaLN
// blocks, the output heads.
#pragma once

#include "backends/cpu/ops.h"
#include "models/h3/transformer.h"

namespace orochi::h3 {

Tensor apply_linear(const Tensor& x, const LinearWeights& l);

// q, k, v [rows, heads, head_dim] of x [rows, H]: q and k per-head RMSNormed, then rotated when a
// RoPE table (of x's rows) is given. `heads` is what the weights hold (all, or a TP rank's share).
struct Qkv {
  Tensor q, k, v;
};
Qkv project_qkv(const Tensor& x, const AttentionWeights& a, int64_t heads, const H3Config& c, const cpu::RopeTable* rope);

// What every transformer block of one forward reads besides its weights.
struct BlockInputs {
  cpu::RopeTable rope;  // [S, rotary_dim]
  Tensor adaln_idx;     // i64 [S]: row -> row of a block's AdaLN table (timestep * 3 + modality)
};
// From validated inputs; reports "rope.cos" and "rope.sin".
BlockInputs block_inputs(const H3Config& c, const H3Inputs& in, const H3Observer& observer);

// The packed residual stream [S, H]: each modality embedded, the text through the token refiner.
// Reports "refiner.<i>", "text_embeds" and "packed".
Tensor embed_sequence(const H3Weights& w, const H3Inputs& in, const H3Observer& observer);

// One AdaLN block in place on h [S, H]; `table` [n_t * 3, 6H] is the block's modulation table.
void transformer_block(Tensor& h, const BlockWeights& b, const Tensor& table, const BlockInputs& inputs,
                       const H3Config& c);

// The output norm (modulated per timestep, not per modality), then the video and audio heads on
// just their rows. Reports "norm_out", "out.video", "out.audio".
H3Outputs output_heads(const H3Weights& w, const Tensor& h, const H3Inputs& in, const ModulationTables& tables,
                       const H3Observer& observer);

}  // namespace orochi::h3
