// H3GpuRunner's sequence-parallel attention: the shared Ulysses layer (layers/cuda/ulysses.h) moves
// the rows and heads and runs attention; H3 projects q, k, v with its per-head RMSNorms and RoPE.
// The tensor-parallel reductions are layers/cuda/tp_linear.h's.
#include "layers/cuda/tp_linear.h"
#include "layers/cuda/ulysses.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi::h3::gpu {

Status H3GpuRunner::ulysses_attention_block(const GpuBlock& b, const Tensor& x, const Tensor& out) {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const layers::gpu::LayerContext ctx = layer_context();
  const layers::gpu::UlyssesShape shape{.rank = rank_.sp_rank, .size = rank_.sp_size, .rows = my.rows,
                                        .shares = my.shares, .total_rows = B.size.rows, .heads = d.attn_heads,
                                        .head_dim = d.head_dim};
  const layers::gpu::UlyssesBuffers buffers{.q = B.q, .k = B.k, .v = B.v, .qa = B.qa, .ka = B.ka, .va = B.va,
                                            .oa = B.oa, .o = B.o, .xa = B.xa};
  layers::gpu::UlyssesExchange ulysses(ctx, *sp_, shape, buffers);
  // q/k/v arrive normalized and rotated; attention over all rows, back to this rank's rows.
  const layers::gpu::QkvProjection project = [&](const GpuLinear (&w)[3], const Tensor& rows_x,
                                                 const Tensor (&qkv)[3], int64_t first_row) {
    return project_qkv(b, w, rows_x, qkv, d.attn_heads, /*rope=*/true, first_row);
  };
  const GpuLinear w[] = {b.to_q, b.to_k, b.to_v};
  OROCHI_RETURN_IF_ERROR(gather_sp_rows_ ? ulysses.qkv_by_gathered_rows(w, x, project) : ulysses.qkv_by_heads(w, x, project));
  if (!tp_ && !split_sp_attention_) return ulysses.attention_out(b.to_out, out);
  OROCHI_RETURN_IF_ERROR(ulysses.attention());
  return layers::gpu::tp_reduced_linear(ctx, tp_, b.to_out, B.o.slice(0, 0, x.dim(0)), out, "gemm out");  // [R, H]
}

}  // namespace orochi::h3::gpu
