#include "models/h3/parallel_forward.h"

#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "dist/sequence_parallel.h"
#include "models/h3/block_forward.h"
#include "models/h3/tensor_parallel.h"

namespace orochi::h3 {
namespace {

// Who computes what on this rank.
struct RankLayout {
  const H3Config& c;
  dist::Comm* tp;
  dist::Comm* sp;
  int64_t heads;    // this TP rank's heads
  int64_t rows;     // S, the whole packed sequence
  dist::Range own;  // this SP rank's packed rows
};

int size_of(const dist::Comm* comm) { return comm ? comm->size() : 1; }

// The shard must hold 1/tp of every block linear; the SwiGLU slice also tells the TP rank apart
// when the FFN width splits unevenly.
Status check_shard(const H3Weights& w, const dist::Comm* tp) {
  const H3Config& c = w.config;
  const int n = size_of(tp), rank = tp ? tp->rank() : 0;
  const int64_t inner = c.inner_dim() / n, ffn = dist::even_share(c.ffn_dim, n, rank).size();
  auto check = [&](const BlockWeights& b, const std::string& where) -> Status {
    const AttentionWeights& a = b.attn;
    if (a.to_q.weight.dim(0) == inner && a.to_k.weight.dim(0) == inner && a.to_v.weight.dim(0) == inner &&
        a.to_out.weight.dim(1) == inner && b.ff_in.weight.dim(0) == 2 * ffn && b.ff_out.weight.dim(1) == ffn)
      return Status::ok();
    return invalid_argument(where + " holds " + std::to_string(a.to_q.weight.dim(0)) + " query channels and " +
                            std::to_string(b.ff_out.weight.dim(1)) + " FFN channels, but tensor-parallel rank " +
                            std::to_string(rank) + " of " + std::to_string(n) + " needs " + std::to_string(inner) +
                            " and " + std::to_string(ffn) + ": shard the weights with shard_weights(full, " +
                            std::to_string(rank) + ", " + std::to_string(n) + ")");
  };
  for (size_t i = 0; i < w.refiner.size(); ++i)
    OROCHI_RETURN_IF_ERROR(check(w.refiner[i], "refiner block " + std::to_string(i)));
  for (size_t i = 0; i < w.blocks.size(); ++i) OROCHI_RETURN_IF_ERROR(check(w.blocks[i], "block " + std::to_string(i)));
  return Status::ok();
}

// Self-attention of this rank's heads for the rows of x [n, H]; with `sp` x holds this rank's
// share of `rows` rows and attention spans all of them. Returns the TP-summed projection [n, H].
Expected<Tensor> attention(const Tensor& x, const AttentionWeights& a, const RankLayout& L, const cpu::RopeTable* rope,
                           dist::Comm* sp, int64_t rows) {
  // The FP8 attention's emulation (emulate_quantization) is the one-rank forward's; FP8 attention
  // runs on one GPU only.
  if (a.emulated_fp8) return unsupported("the parallel CPU forward has no FP8 attention emulation: use one rank");
  const int64_t n = x.dim(0), h = L.heads, d = L.c.attention_head_dim;
  const Qkv qkv = project_qkv(x, a, h, L.c, rope);  // [n, h, d] each
  OROCHI_ASSIGN_OR_RETURN(Tensor q_all, dist::rows_to_heads(qkv.q, sp, rows));  // [S, h/P, d]
  OROCHI_ASSIGN_OR_RETURN(Tensor k_all, dist::rows_to_heads(qkv.k, sp, rows));
  OROCHI_ASSIGN_OR_RETURN(Tensor v_all, dist::rows_to_heads(qkv.v, sp, rows));
  OROCHI_ASSIGN_OR_RETURN(Tensor o, dist::heads_to_rows(cpu::attention(q_all, k_all, v_all), sp, rows));  // [n, h, d]
  Tensor out = apply_linear(o.view({n, h * d}), a.to_out);  // [n, H] partial over TP
  OROCHI_RETURN_IF_ERROR(dist::sum_partials(out, L.tp));
  return out;
}

Expected<Tensor> feed_forward(const Tensor& x, const BlockWeights& b, const RankLayout& L) {
  Tensor out = apply_linear(cpu::swiglu(apply_linear(x, b.ff_in)), b.ff_out);  // [n, H] partial over TP
  OROCHI_RETURN_IF_ERROR(dist::sum_partials(out, L.tp));
  return out;
}

// The refiner runs on all L text rows on every SP rank: only TP splits it.
Status refiner_block(Tensor& text, const BlockWeights& b, const RankLayout& L) {
  const float eps = static_cast<float>(L.c.norm_eps);
  OROCHI_ASSIGN_OR_RETURN(Tensor a,
                          attention(cpu::rms_norm(text, b.norm1, eps), b.attn, L, nullptr, nullptr, text.dim(0)));
  cpu::add_inplace(text, a);
  OROCHI_ASSIGN_OR_RETURN(Tensor f, feed_forward(cpu::rms_norm(text, b.norm2, eps), b, L));
  cpu::add_inplace(text, f);
  return Status::ok();
}

// h [n, H]: this rank's rows of the residual stream; adaln_idx [n] indexes `table` [n_t*3, 6H].
Status transformer_block(Tensor& h, const BlockWeights& b, const Tensor& table, const Tensor& adaln_idx,
                         const cpu::RopeTable& rope, const RankLayout& L) {
  const int64_t H = L.c.hidden_size;
  const float eps = static_cast<float>(L.c.norm_eps);
  auto chunk = [&](int i) { return table.slice(1, i * H, (i + 1) * H); };  // row-strided [R, H]
  Tensor a = cpu::modulate(cpu::rms_norm(h, b.norm1, eps), chunk(0), chunk(1), adaln_idx);
  OROCHI_ASSIGN_OR_RETURN(Tensor attn, attention(a, b.attn, L, &rope, L.sp, L.rows));
  cpu::gated_residual(h, chunk(2), adaln_idx, attn);
  Tensor f = cpu::modulate(cpu::rms_norm(h, b.norm2, eps), chunk(3), chunk(4), adaln_idx);
  OROCHI_ASSIGN_OR_RETURN(Tensor ff, feed_forward(f, b, L));
  cpu::gated_residual(h, chunk(5), adaln_idx, ff);
  return Status::ok();
}

// The full packed residual stream [S, H] after embedding (text through the refiner).
Expected<Tensor> embed(const H3Weights& w, const H3Inputs& in, const RankLayout& L) {
  Tensor text = apply_linear(in.text.contiguous(), w.context_embedder);  // [L, H]
  for (size_t i = 0; i < w.refiner.size(); ++i)
    OROCHI_RETURN_IF_ERROR(refiner_block(text, w.refiner[i], L).with_context("refiner block " + std::to_string(i)));
  text = cpu::rms_norm(text, w.refiner_final_norm, static_cast<float>(L.c.final_norm_eps));
  Tensor h = Tensor::zeros({L.rows, L.c.hidden_size}, DType::kF32);  // [S, H]
  cpu::scatter_rows(h, in.text_indices, text);
  cpu::scatter_rows(h, in.video_indices, apply_linear(in.video.contiguous(), w.proj_in));
  cpu::scatter_rows(h, in.audio_indices, apply_linear(in.audio.contiguous(), w.audio_proj_in));
  return h;
}

// Rows [own.begin, own.end) of an i64 [S] tensor.
Tensor own_slice(const Tensor& t, const dist::Range& own) {
  return t.contiguous().slice(0, own.begin, own.end).clone();
}

}  // namespace

Expected<H3Outputs> forward_parallel(const H3Weights& w, const H3Inputs& in, const ModulationTables& tables,
                                     const ParallelGroups& groups) {
  const H3Config& c = w.config;
  OROCHI_RETURN_IF_ERROR(validate_inputs(c, in, tables.timesteps.numel()));
  OROCHI_CHECK(tables.blocks.size() == w.blocks.size(), "modulation tables for ", tables.blocks.size(),
               " blocks, model has ", w.blocks.size());
  const int tp_size = size_of(groups.tp), sp_size = size_of(groups.sp);
  OROCHI_RETURN_IF_ERROR(check_parallel_layout(c, tp_size, sp_size));
  OROCHI_RETURN_IF_ERROR(check_shard(w, groups.tp));
  const int64_t S = in.rows(), H = c.hidden_size, heads = c.num_attention_heads / tp_size;
  if (S < sp_size)
    return invalid_argument("the packed sequence has " + std::to_string(S) + " rows, fewer than the " +
                            std::to_string(sp_size) + " sequence-parallel ranks");
  const RankLayout L{c, groups.tp, groups.sp, heads, S, dist::own_rows(S, groups.sp)};
  const int64_t n = L.own.size();

  // 1. Every rank embeds the whole sequence (cheap next to the blocks) and keeps its rows.
  OROCHI_ASSIGN_OR_RETURN(Tensor packed, embed(w, in, L));
  Tensor h = packed.slice(0, L.own.begin, L.own.end).clone();  // [n, H]
  const cpu::RopeTable rope = cpu::rope_table(
      own_slice(in.positions, L.own),
      cpu::rope_inv_freq(static_cast<int>(c.rope_freq_dim), static_cast<float>(c.rope_theta)));  // [n, rot]

  // 2. Blocks over this rank's rows.
  const Tensor ts = own_slice(in.timestep_indices, L.own), tags = own_slice(in.token_tags, L.own);
  std::vector<int64_t> adaln(n);
  for (int64_t s = 0; s < n; ++s) adaln[s] = ts.data<int64_t>()[s] * kModalities + tags.data<int64_t>()[s];
  const Tensor adaln_idx = Tensor::from_ints(adaln, {n});
  for (size_t i = 0; i < w.blocks.size(); ++i)
    OROCHI_RETURN_IF_ERROR(transformer_block(h, w.blocks[i], tables.blocks[i], adaln_idx, rope, L)
                               .with_context("block " + std::to_string(i)));

  // 3. Output norm on own rows, gathered so every rank runs both heads on the full sequence.
  const Tensor y_own = cpu::modulate(cpu::rms_norm(h, w.norm_out, static_cast<float>(c.final_norm_eps)),
                                     tables.final.slice(1, 0, H), tables.final.slice(1, H, 2 * H), ts);  // [n, H]
  Expected<Tensor> y = dist::gather_row_shares(y_own, L.sp, S);                                          // [S, H]
  if (!y) return y.status().with_context("gathering the output rows");
  H3Outputs out;
  out.video = apply_linear(cpu::gather_rows(*y, in.video_indices.contiguous()), w.proj_out);
  out.audio = apply_linear(cpu::gather_rows(*y, in.audio_indices.contiguous()), w.audio_proj_out);
  return out;
}

}  // namespace orochi::h3
