#include "models/h3/parallel_shard.h"

#include <string>

#include "models/h3/tensor_parallel.h"

namespace orochi::h3 {
namespace {

// The slices of one TP rank, one per kind of block linear.
struct BlockSlices {
  TpSlice heads_out, heads_in, swiglu_out, ffn_in;
};

LinearWeights cut(const LinearWeights& l, const TpSlice& slice, bool rank0) {
  LinearWeights out;
  out.weight = tp_slice_host(l.weight, slice);
  // An unmerged LoRA follows its layer: B's rows with output rows, A's columns with input columns
  // (the partial outputs' all_reduce then sums scale · B(A_rank x_rank) into scale · B(A x)).
  for (const LoraAdapter& a : l.adapters) {
    const bool by_rows = slice.kind != TpSlice::Kind::kInColumns;
    out.adapters.push_back(LoraAdapter{by_rows ? a.down : tp_slice_host(a.down, slice),
                                       by_rows ? tp_slice_host(a.up, slice) : a.up, a.scale});
  }
  if (!l.bias.defined()) return out;
  // An output bias follows its rows; an input-split layer's bias is added by rank 0 alone.
  if (slice.kind != TpSlice::Kind::kInColumns)
    out.bias = tp_slice_host(l.bias, slice);
  else if (rank0)
    out.bias = l.bias;
  return out;
}

BlockWeights shard_block(const BlockWeights& b, const BlockSlices& s, bool rank0) {
  BlockWeights out = b;  // norms and the AdaLN projection stay shared
  out.attn.to_q = cut(b.attn.to_q, s.heads_out, rank0);
  out.attn.to_k = cut(b.attn.to_k, s.heads_out, rank0);
  out.attn.to_v = cut(b.attn.to_v, s.heads_out, rank0);
  out.attn.to_out = cut(b.attn.to_out, s.heads_in, rank0);
  out.ff_in = cut(b.ff_in, s.swiglu_out, rank0);
  out.ff_out = cut(b.ff_out, s.ffn_in, rank0);
  return out;
}

}  // namespace

Expected<H3Weights> shard_weights(const H3Weights& full, int tp_rank, int tp_size) {
  const H3Config& c = full.config;
  OROCHI_RETURN_IF_ERROR(check_parallel_layout(c, tp_size, 1));
  if (tp_rank < 0 || tp_rank >= tp_size)
    return invalid_argument("tensor-parallel rank " + std::to_string(tp_rank) + " is outside [0, " +
                            std::to_string(tp_size) + ")");
  if (tp_size == 1) return full;
  const TpShare share = tp_share(c, tp_rank, tp_size);
  const dist::Range channels{share.heads.begin * c.attention_head_dim, share.heads.end * c.attention_head_dim};
  const BlockSlices slices{{TpSlice::Kind::kOutRows, channels, 0},
                           {TpSlice::Kind::kInColumns, channels, 0},
                           {TpSlice::Kind::kOutRowsBothHalves, share.ffn, c.ffn_dim},
                           {TpSlice::Kind::kInColumns, share.ffn, 0}};
  H3Weights out = full;  // shares every replicated tensor
  for (BlockWeights& b : out.refiner) b = shard_block(b, slices, tp_rank == 0);
  for (BlockWeights& b : out.blocks) b = shard_block(b, slices, tp_rank == 0);
  return out;
}

}  // namespace orochi::h3
