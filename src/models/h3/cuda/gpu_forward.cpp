// H3GpuRunner's forward: the text refiner, the embeddings, the blocks and the heads, for one rank
// of a TP x SP layout (the whole model and every row on one GPU).
#include <algorithm>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi::h3::gpu {
namespace {

using cuda::kernels::bf16;
using cuda::kernels::ModulationRows;

template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

Status launched(cudaError_t err, const char* what) { return cuda::cuda_status(err, what); }

// Rows [j * C, (j + 1) * C) of a linear's weight: the heads of one SP chunk.
GpuLinear out_rows(const GpuLinear& l, int64_t j, int64_t C) { return {l.weight.slice(0, j * C, (j + 1) * C), {}}; }

}  // namespace

Status H3GpuRunner::comm_after_compute() {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(compute_ready_, stream_));
  return launched(cudaStreamWaitEvent(comm_stream_, compute_ready_, 0), "comm stream wait");
}

Status H3GpuRunner::compute_waits(cudaEvent_t comm_event) {
  timer_.begin("wait for comm");  // the communication the compute stream could not hide
  Status s = launched(cudaStreamWaitEvent(stream_, comm_event, 0), "compute stream wait");
  timer_.end();
  return s;
}

Status H3GpuRunner::compute_after_comm() {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(comm_done_, comm_stream_));
  return compute_waits(comm_done_);
}

Status H3GpuRunner::linear_reduced(const GpuLinear& l, const Tensor& x, const Tensor& y, const char* what) {
  if (!tp_) {
    timer_.begin(what);
    Status s = linear(l, x, y);
    timer_.end();
    return s;
  }
  // Chunks of >= 4096 rows keep each GEMM efficient; all but the last chunk's all_reduce hide
  // under the following GEMMs.
  const int64_t rows = x.dim(0), H = y.dim(1);
  const int chunks = static_cast<int>(std::clamp<int64_t>(rows / 4096, 1, 8));
  for (int c = 0; c < chunks; ++c) {
    const dist::Range part = dist::even_share(rows, chunks, c);
    const Tensor y_part = y.slice(0, part.begin, part.end);
    timer_.begin(what);
    OROCHI_RETURN_IF_ERROR(linear(l, x.slice(0, part.begin, part.end), y_part));  // partial sums
    timer_.end();
    OROCHI_RETURN_IF_ERROR(comm_after_compute());
    comm_timer_.begin("all_reduce");
    Status s = tp_->all_reduce_sum(y_part.raw_data(), part.size() * H, DType::kBF16);
    comm_timer_.end();
    if (!s.is_ok()) return s.with_context(what);
  }
  return compute_after_comm();
}

// Round `step` of the Ulysses exchange between this rank r, peer p = r + step and source
// s = r - step (mod sp). to_heads: my rows of p's heads (slot p of `send`, [sp, R, C]) go to p;
// s's rows of my heads land in their rows of `recv` [S, C]. Back: rows of p in `send` [S, C] go to
// p; my rows of s's heads land in slot s of `recv`.
Status H3GpuRunner::exchange_round(int step, const Tensor& send, const Tensor& recv, bool to_heads) {
  const RankRows& my = buf_->layout;
  const int n = rank_.sp_size, r = rank_.sp_rank, p = (r + step) % n, src = (r - step + n) % n;
  const int64_t C = rank_dims(config_, buf_->size, rank_).attn_inner(), R = my.rows.size();
  std::vector<int64_t> send_counts(n, 0), send_offsets(n, 0), recv_counts(n, 0), recv_offsets(n, 0);
  if (to_heads) {
    send_counts[p] = R * C, send_offsets[p] = p * R * C;
    recv_counts[src] = my.shares[src].size() * C, recv_offsets[src] = my.shares[src].begin * C;
  } else {
    send_counts[p] = my.shares[p].size() * C, send_offsets[p] = my.shares[p].begin * C;
    recv_counts[src] = R * C, recv_offsets[src] = src * R * C;
  }
  return sp_->all_to_all(send.raw_data(), send_counts, send_offsets, recv.raw_data(), recv_counts, recv_offsets,
                         DType::kBF16);
}

// q, k, v of this rank's rows x [R, H] for every SP rank's heads: the peers' chunks are projected
// first and sent while the GEMMs of this rank's own chunk run; every row of this rank's heads ends
// in qa/ka/va [S, C].
Status H3GpuRunner::ulysses_qkv(const GpuBlock& b, const Tensor& x) {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int n = rank_.sp_size, r = rank_.sp_rank;
  const int64_t C = d.attn_inner(), R = my.rows.size(), rot = config_.rotary_dim();
  const float eps = static_cast<float>(config_.qk_norm_eps);
  auto slot = [&](const Tensor& t, int j) { return t.view({-1}).slice(0, j * R * C, (j + 1) * R * C).view({R, C}); };
  struct Part {
    const GpuLinear* weight;
    const Tensor* norm;  // q and k: per-head RMSNorm + RoPE before they travel; v: none
    Tensor send, all_rows;
  };
  const Part parts[3] = {{&b.to_q, &b.norm_q, B.q, B.qa}, {&b.to_k, &b.norm_k, B.k, B.ka}, {&b.to_v, nullptr, B.v, B.va}};
  // This rank's rows of one chunk of heads: projected, then (q, k) normalized and rotated with
  // this rank's rows' angles, so nothing is left to do on them after the exchange.
  auto project = [&](const Part& part, int j, const Tensor& out) -> Status {
    timer_.begin("gemm qkv");
    OROCHI_RETURN_IF_ERROR(linear(out_rows(*part.weight, j, C), x, out));  // [R, C]
    timer_.end();
    if (!part.norm) return Status::ok();
    timer_.begin("qk norm + rope");
    Status s = launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(out), ptr<const bf16>(*part.norm), R, d.attn_heads,
                                                           d.head_dim, eps, ptr<const bf16>(B.rope_cos) + my.rows.begin * rot,
                                                           ptr<const bf16>(B.rope_sin) + my.rows.begin * rot, rot, stream_),
                        "qk_norm_rope");
    timer_.end();
    return s;
  };
  // q's exchange starts after its chunks for the peers and runs under k's and v's GEMMs, and so
  // on; this rank's own chunks come last, under the tail of the exchanges.
  for (int t = 0; t < 3; ++t) {
    for (int step = 1; step < n; ++step) {
      const int p = (r + step) % n;
      OROCHI_RETURN_IF_ERROR(project(parts[t], p, slot(parts[t].send, p)));
      OROCHI_RETURN_IF_ERROR(comm_after_compute());
      comm_timer_.begin("all_to_all qkv");
      OROCHI_RETURN_IF_ERROR(exchange_round(step, parts[t].send, parts[t].all_rows, true));
      comm_timer_.end();
    }
  }
  for (const Part& part : parts)
    OROCHI_RETURN_IF_ERROR(project(part, r, part.all_rows.slice(0, my.rows.begin, my.rows.end)));
  return compute_after_comm();
}

// Attention of this rank's heads over all S rows, one SP share of query rows at a time: the
// peers' shares first, each sent back while the next share computes, this rank's own share last.
// Ends with this rank's rows of every head in B.o [R, sp * C].
Status H3GpuRunner::ulysses_attention() {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int n = rank_.sp_size, r = rank_.sp_rank;
  const int64_t C = d.attn_inner(), R = my.rows.size(), S = B.size.rows;
  const size_t row = static_cast<size_t>(C) * sizeof(bf16);
  auto attend = [&](int j) -> Status {
    const dist::Range q_rows = my.shares[j];
    const cuda::AttentionShape shape{.s_q = q_rows.size(), .s_kv = S, .heads = d.attn_heads, .head_dim = d.head_dim};
    timer_.begin("attention");
    Status s = attention_->run(static_cast<const char*>(B.qa.raw_data()) + q_rows.begin * row, B.ka.raw_data(),
                               B.va.raw_data(), static_cast<char*>(B.oa.raw_data()) + q_rows.begin * row, shape, stream_);
    timer_.end();
    return s;
  };
  // [rows, C] at `src` (pitch C) into columns [j * C, (j + 1) * C) of B.o; a kernel, not a 2D
  // memcpy, which runs on the copy engines at a fraction of the bandwidth.
  auto place = [&](const void* src, int j) {
    timer_.begin("ulysses unpack");
    Status s = launched(cuda::kernels::launch_copy_rows(static_cast<char*>(B.o.raw_data()) + j * row, n * row, nullptr, src,
                                                        row, nullptr, R, row, stream_), "ulysses unpack");
    timer_.end();
    return s;
  };
  for (int step = 1; step < n; ++step) {
    OROCHI_RETURN_IF_ERROR(attend((r + step) % n));
    OROCHI_RETURN_IF_ERROR(comm_after_compute());
    comm_timer_.begin("all_to_all o");
    OROCHI_RETURN_IF_ERROR(exchange_round(step, B.oa, B.q, false));
    comm_timer_.end();
  }
  OROCHI_RETURN_IF_ERROR(attend(r));
  OROCHI_RETURN_IF_ERROR(place(static_cast<const char*>(B.oa.raw_data()) + my.rows.begin * row, r));
  OROCHI_RETURN_IF_ERROR(compute_after_comm());
  for (int j = 0; j < n; ++j)
    if (j != r) OROCHI_RETURN_IF_ERROR(place(static_cast<const char*>(B.q.raw_data()) + j * R * row, j));
  return Status::ok();
}

// Self-attention of `rows` rows of x into out [rows, H]. A transformer block (`main`) applies RoPE
// and, with SP, attends over every rank's rows through the Ulysses exchange; the refiner attends
// over its L text rows alone. With TP, out is summed over the group.
Status H3GpuRunner::attention_block(const GpuBlock& b, const Tensor& x, int64_t rows, bool main, const Tensor& out) {
  RequestBuffers& B = *buf_;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int64_t hd = config_.attention_head_dim;
  const float eps = static_cast<float>(config_.qk_norm_eps);
  const int64_t heads = d.heads;
  const Tensor q = B.q.slice(0, 0, rows), k = B.k.slice(0, 0, rows), v = B.v.slice(0, 0, rows), o = B.o.slice(0, 0, rows);
  if (main && sp_ != nullptr) {
    // q/k/v arrive normalized and rotated; attention over all rows, back to this rank's rows.
    OROCHI_RETURN_IF_ERROR(ulysses_qkv(b, x));
    OROCHI_RETURN_IF_ERROR(ulysses_attention());
    return linear_reduced(b.to_out, o, out, "gemm out");
  }
  timer_.begin("gemm qkv");
  OROCHI_RETURN_IF_ERROR(linear(b.to_q, x, q));  // [rows, heads * hd]
  OROCHI_RETURN_IF_ERROR(linear(b.to_k, x, k));
  OROCHI_RETURN_IF_ERROR(linear(b.to_v, x, v));
  timer_.end();
  timer_.begin("qk norm + rope");
  const bf16* cos = main ? ptr<const bf16>(B.rope_cos) : nullptr;
  const bf16* sin = main ? ptr<const bf16>(B.rope_sin) : nullptr;
  const int64_t R = main ? config_.rotary_dim() : 0;
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(q), ptr<const bf16>(b.norm_q), rows, heads,
                                                                     hd, eps, cos, sin, R, stream_), "qk_norm_rope q"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_qk_norm_rope(ptr<bf16>(k), ptr<const bf16>(b.norm_k), rows, heads,
                                                                     hd, eps, cos, sin, R, stream_), "qk_norm_rope k"));
  timer_.end();
  timer_.begin("attention");
  OROCHI_RETURN_IF_ERROR(attention_->run(q.raw_data(), k.raw_data(), v.raw_data(), o.raw_data(), rows, heads, hd, stream_));
  timer_.end();
  return linear_reduced(b.to_out, o, out, "gemm out");  // [rows, H]
}

// SwiGLU FFN of `rows` rows of x into out [rows, H] (summed over TP).
Status H3GpuRunner::feed_forward(const GpuBlock& b, const Tensor& x, int64_t rows, const Tensor& out) {
  RequestBuffers& B = *buf_;
  const Tensor u = B.u.slice(0, 0, rows), g = B.g.slice(0, 0, rows);
  timer_.begin("gemm ffn in");
  OROCHI_RETURN_IF_ERROR(linear(b.ff_in, x, u));  // [rows, 2F/tp]
  timer_.end();
  timer_.begin("swiglu");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_swiglu(ptr<const bf16>(u), ptr<bf16>(g), rows, g.dim(1), stream_), "swiglu"));
  timer_.end();
  return linear_reduced(b.ff_out, g, out, "gemm ffn out");
}

Status H3GpuRunner::refiner_block(const GpuBlock& b, const Tensor& t) {
  RequestBuffers& B = *buf_;
  const int64_t L = t.dim(0), H = config_.hidden_size;
  const float eps = static_cast<float>(config_.norm_eps);
  const Tensor a = B.a.slice(0, 0, L), o2 = B.o2.slice(0, 0, L);
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(t), ptr<const bf16>(b.norm1), ptr<bf16>(a),
                                                                 L, H, eps, nullptr, stream_), "refiner norm1"));
  OROCHI_RETURN_IF_ERROR(attention_block(b, a, L, false, o2));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_add(ptr<bf16>(t), ptr<const bf16>(o2), L * H, stream_), "add"));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(t), ptr<const bf16>(b.norm2), ptr<bf16>(a),
                                                                 L, H, eps, nullptr, stream_), "refiner norm2"));
  OROCHI_RETURN_IF_ERROR(feed_forward(b, a, L, o2));
  return launched(cuda::kernels::launch_add(ptr<bf16>(t), ptr<const bf16>(o2), L * H, stream_), "add");
}

Status H3GpuRunner::transformer_block(size_t index, const GpuBlock& b) {
  RequestBuffers& B = *buf_;
  const int64_t R = B.h.dim(0), H = config_.hidden_size, W = 6 * H;
  const float eps = static_cast<float>(config_.norm_eps);
  const bf16* table = ptr<const bf16>(B.tables) + static_cast<int64_t>(index) * B.n_t * kModalities * W;
  const int64_t* idx = ptr<const int64_t>(B.adaln_idx);
  const Tensor a = B.a.slice(0, 0, R), o2 = B.o2.slice(0, 0, R);
  // Column blocks of the [n_t * 3, 6H] table: shift/scale/gate msa, shift/scale/gate mlp.
  const ModulationRows msa{table, W, table + H, W, idx}, mlp{table + 3 * H, W, table + 4 * H, W, idx};
  timer_.begin("norm + modulate");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(b.norm1),
                                                                 ptr<bf16>(a), R, H, eps, &msa, stream_), "norm1"));
  timer_.end();
  OROCHI_RETURN_IF_ERROR(attention_block(b, a, R, true, o2));
  timer_.begin("gated residual");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual(ptr<bf16>(B.h), table + 2 * H, W, idx,
                                                                       ptr<const bf16>(o2), R, H, stream_), "gate msa"));
  timer_.end();
  timer_.begin("norm + modulate");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(b.norm2),
                                                                 ptr<bf16>(a), R, H, eps, &mlp, stream_), "norm2"));
  timer_.end();
  OROCHI_RETURN_IF_ERROR(feed_forward(b, a, R, o2));
  timer_.begin("gated residual");
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_gated_residual(ptr<bf16>(B.h), table + 5 * H, W, idx,
                                                                       ptr<const bf16>(o2), R, H, stream_), "gate mlp"));
  timer_.end();
  return Status::ok();
}

Status H3GpuRunner::forward() {
  OROCHI_CHECK(buf_ != nullptr, "forward() before set_request()");
  RequestBuffers& B = *buf_;
  const int64_t R = B.h.dim(0), L = B.text.dim(0), H = config_.hidden_size;
  const int64_t nv = B.video_in.dim(0), na = B.audio_in.dim(0), lt = B.text_pos.dim(0);
  const size_t row_bytes = static_cast<size_t>(H) * 2;
  // 1. Text: context embedder, token refiner, final norm (all L rows on every rank); this rank's
  //    text rows go into its part of the packed stream.
  OROCHI_RETURN_IF_ERROR(linear(weights_.context_embedder, B.text_in, B.text));
  for (const GpuBlock& b : weights_.refiner) OROCHI_RETURN_IF_ERROR(refiner_block(b, B.text));
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.text), ptr<const bf16>(weights_.refiner_final_norm),
                                                                 ptr<bf16>(B.a), L, H, static_cast<float>(config_.final_norm_eps),
                                                                 nullptr, stream_), "refiner final norm"));
  if (lt > 0)
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(B.h.raw_data(), row_bytes, ptr<const int64_t>(B.text_dst), B.a.raw_data(),
                                                                    row_bytes, ptr<const int64_t>(B.text_pos), lt, row_bytes, stream_),
                                    "scatter text"));
  // 2. Video and audio rows: f32 patch projections, rounded to bf16 into the stream.
  auto embed = [&](const GpuLinear& proj, const Tensor& rows_in, const Tensor& dst, int64_t n, const char* what) -> Status {
    if (n == 0) return Status::ok();
    const Tensor emb = B.rows_f32.slice(0, 0, n);
    OROCHI_RETURN_IF_ERROR(linear(proj, rows_in, emb));  // f32 [n, H]
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_cast_f32_to_bf16(ptr<const float>(emb), ptr<bf16>(B.a), n * H, stream_), what));
    return launched(cuda::kernels::launch_copy_rows(B.h.raw_data(), row_bytes, ptr<const int64_t>(dst), B.a.raw_data(),
                                                    row_bytes, nullptr, n, row_bytes, stream_), what);
  };
  OROCHI_RETURN_IF_ERROR(embed(weights_.proj_in, B.video_in, B.video_dst, nv, "embed video"));
  OROCHI_RETURN_IF_ERROR(embed(weights_.audio_proj_in, B.audio_in, B.audio_dst, na, "embed audio"));
  // 3. The blocks.
  // A streamed block's weights are in a staging slot by the time the compute stream reaches it.
  if (streamer_) OROCHI_RETURN_IF_ERROR(streamer_->begin_pass());
  for (size_t i = 0; i < weights_.blocks.size(); ++i) {
    int slot = -1;
    if (streamer_) {
      OROCHI_ASSIGN_OR_RETURN(slot, streamer_->acquire(static_cast<int>(i)));
    }
    OROCHI_RETURN_IF_ERROR(transformer_block(i, slot < 0 ? weights_.blocks[i] : slot_blocks_[slot]));
    if (streamer_) OROCHI_RETURN_IF_ERROR(streamer_->release(static_cast<int>(i)));
  }
  // 4. Output norm modulated per timestep, then each head on its own rows in f32.
  const bf16* ft = ptr<const bf16>(B.final_table);
  const ModulationRows out_mod{ft, 2 * H, ft + H, 2 * H, ptr<const int64_t>(B.ts_idx)};
  OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_rms_norm(ptr<const bf16>(B.h), ptr<const bf16>(weights_.norm_out),
                                                                 ptr<bf16>(B.a), R, H, static_cast<float>(config_.final_norm_eps),
                                                                 &out_mod, stream_), "norm_out"));
  auto head = [&](const GpuLinear& proj, const Tensor& idx, int64_t n, const Tensor& out, const char* what) -> Status {
    if (n == 0) return Status::ok();
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_copy_rows(B.o2.raw_data(), row_bytes, nullptr, B.a.raw_data(),
                                                                    row_bytes, ptr<const int64_t>(idx), n, row_bytes, stream_), what));
    const Tensor rows = B.rows_f32.slice(0, 0, n);
    OROCHI_RETURN_IF_ERROR(launched(cuda::kernels::launch_cast_bf16_to_f32(ptr<const bf16>(B.o2), ptr<float>(rows), n * H, stream_), what));
    return linear(proj, rows, out);
  };
  OROCHI_RETURN_IF_ERROR(head(weights_.proj_out, B.video_dst, nv, B.video_out, "video head"));
  return head(weights_.audio_proj_out, B.audio_dst, na, B.audio_out, "audio head");
}

}  // namespace orochi::h3::gpu
