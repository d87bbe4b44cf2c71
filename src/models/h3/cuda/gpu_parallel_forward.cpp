// H3GpuRunner's multi-GPU steps: the Ulysses exchanges around attention (sequence parallel) and
// the chunked, overlapped all_reduce of row-split linears (tensor parallel), with the comm stream
// ordered against the compute stream by events.
#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi::h3::gpu {
namespace {

using cuda::kernels::bf16;

Status launched(cudaError_t err, const char* what) { return cuda::cuda_status(err, what); }

// Rows [j * C, (j + 1) * C) of a linear's weight: the heads of one SP chunk.
GpuLinear out_rows(const GpuLinear& l, int64_t j, int64_t C) { return {l.weight.slice(0, j * C, (j + 1) * C), {}}; }

}  // namespace

Status H3GpuRunner::comm_after_compute() {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(compute_ready_, stream_));
  return launched(cudaStreamWaitEvent(comm_stream_, compute_ready_, 0), "comm stream wait");
}

Status H3GpuRunner::compute_after_comm() {
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(comm_done_, comm_stream_));
  timer_.begin("wait for comm");  // the communication the compute stream could not hide
  Status s = launched(cudaStreamWaitEvent(stream_, comm_done_, 0), "compute stream wait");
  timer_.end();
  return s;
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

// The heads scheme (OROCHI_SP_QKV=heads): q, k, v of this rank's rows x [R, H] for every SP
// rank's heads: each peer's chunk of heads is projected (q, k and v in one batched GEMM) and sent
// while the next chunk's GEMM runs; this rank's own chunk comes last, under the tail of the
// exchanges. Every row of this rank's heads ends in qa/ka/va [S, C].
Status H3GpuRunner::ulysses_qkv(const GpuBlock& b, const Tensor& x) {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int n = rank_.sp_size, r = rank_.sp_rank;
  const int64_t C = d.attn_inner(), R = my.rows.size();
  auto slot = [&](const Tensor& t, int j) { return t.view({-1}).slice(0, j * R * C, (j + 1) * R * C).view({R, C}); };
  // This rank's rows of chunk j of the heads, into out[0..2] [R, C]; q and k then normalized and
  // rotated with this rank's rows' angles, so nothing is left to do on them after the exchange.
  auto project = [&](int j, const Tensor (&out)[3]) -> Status {
    const GpuLinear w[] = {out_rows(b.to_q, j, C), out_rows(b.to_k, j, C), out_rows(b.to_v, j, C)};
    return project_qkv(b, w, x, out, d.attn_heads, /*rope=*/true, my.rows.begin);
  };
  for (int step = 1; step < n; ++step) {
    const int p = (r + step) % n;
    const Tensor out[] = {slot(B.q, p), slot(B.k, p), slot(B.v, p)};
    OROCHI_RETURN_IF_ERROR(project(p, out));
    OROCHI_RETURN_IF_ERROR(comm_after_compute());
    comm_timer_.begin("all_to_all qkv");
    OROCHI_RETURN_IF_ERROR(exchange_round(step, B.q, B.qa, true));
    OROCHI_RETURN_IF_ERROR(exchange_round(step, B.k, B.ka, true));
    OROCHI_RETURN_IF_ERROR(exchange_round(step, B.v, B.va, true));
    comm_timer_.end();
  }
  auto my_rows = [&](const Tensor& t) { return t.slice(0, my.rows.begin, my.rows.end); };
  const Tensor mine[] = {my_rows(B.qa), my_rows(B.ka), my_rows(B.va)};
  OROCHI_RETURN_IF_ERROR(project(r, mine));
  return compute_after_comm();
}

// q, k, v of all S rows of this rank's heads into qa/ka/va: this rank's rows of x [R, H] go to
// every peer while this rank projects its own rows; then the peers' rows that arrived in xa.
// H values per row cross the link instead of the heads scheme's 3 * inner / sp chunks per peer.
Status H3GpuRunner::ulysses_qkv_gathered(const GpuBlock& b, const Tensor& x) {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int n = rank_.sp_size, r = rank_.sp_rank;
  const int64_t C = d.attn_inner(), H = config_.hidden_size, R = my.rows.size();
  // xa holds the peers' rows in row order, without this rank's: row i lands at i, or i - R past mine.
  auto xa_row = [&](int64_t row) { return row < my.rows.begin ? row : row - R; };
  std::vector<int64_t> send_counts(n, R * H), send_offsets(n, 0), recv_counts(n, 0), recv_offsets(n, 0);
  send_counts[r] = 0;
  for (int j = 0; j < n; ++j)
    if (j != r) recv_counts[j] = my.shares[j].size() * H, recv_offsets[j] = xa_row(my.shares[j].begin) * H;
  OROCHI_RETURN_IF_ERROR(comm_after_compute());
  comm_timer_.begin("all_gather x");
  OROCHI_RETURN_IF_ERROR(sp_->all_to_all(x.raw_data(), send_counts, send_offsets, B.xa.raw_data(), recv_counts,
                                         recv_offsets, DType::kBF16));
  comm_timer_.end();
  const GpuLinear w[] = {out_rows(b.to_q, r, C), out_rows(b.to_k, r, C), out_rows(b.to_v, r, C)};
  // Rows `rows` of the packed sequence from `in` [rows, H], normalized and rotated with their angles.
  auto project = [&](const dist::Range& rows, const Tensor& in) -> Status {
    auto part = [&](const Tensor& t) { return t.slice(0, rows.begin, rows.end); };
    const Tensor out[] = {part(B.qa), part(B.ka), part(B.va)};  // [rows, C]
    return project_qkv(b, w, in, out, d.attn_heads, /*rope=*/true, rows.begin);
  };
  OROCHI_RETURN_IF_ERROR(project(my.rows, x));
  OROCHI_RETURN_IF_ERROR(compute_after_comm());
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    const int64_t first = xa_row(my.shares[j].begin);
    OROCHI_RETURN_IF_ERROR(project(my.shares[j], B.xa.slice(0, first, first + my.shares[j].size())));
  }
  return Status::ok();
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
  auto attend_share = [&](int j) -> Status {
    const dist::Range q_rows = my.shares[j];
    const cuda::AttentionShape shape{.s_q = q_rows.size(), .s_kv = S, .heads = d.attn_heads, .head_dim = d.head_dim};
    timer_.begin("attention");
    Status s = attend(static_cast<const char*>(B.qa.raw_data()) + q_rows.begin * row, B.ka.raw_data(), B.va.raw_data(),
                      static_cast<char*>(B.oa.raw_data()) + q_rows.begin * row, shape);
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
    OROCHI_RETURN_IF_ERROR(attend_share((r + step) % n));
    OROCHI_RETURN_IF_ERROR(comm_after_compute());
    comm_timer_.begin("all_to_all o");
    OROCHI_RETURN_IF_ERROR(exchange_round(step, B.oa, B.q, false));
    comm_timer_.end();
  }
  OROCHI_RETURN_IF_ERROR(attend_share(r));
  OROCHI_RETURN_IF_ERROR(place(static_cast<const char*>(B.oa.raw_data()) + my.rows.begin * row, r));
  OROCHI_RETURN_IF_ERROR(compute_after_comm());
  for (int j = 0; j < n; ++j)
    if (j != r) OROCHI_RETURN_IF_ERROR(place(static_cast<const char*>(B.q.raw_data()) + j * R * row, j));
  return Status::ok();
}

// One attention call over all S rows of this rank's heads (one launch's tail instead of one per
// SP share), then out [R, H] = sum over ranks j of (my rows of j's heads) · to_out[:, j's heads]^T:
// this rank's own heads first, with the bias, while the exchange brings the peers' heads of its
// rows; their products accumulate into out as they are waited for.
Status H3GpuRunner::ulysses_attention_out(const GpuLinear& to_out, const Tensor& out) {
  RequestBuffers& B = *buf_;
  const RankRows& my = B.layout;
  const RankDims d = rank_dims(config_, B.size, rank_);
  const int n = rank_.sp_size, r = rank_.sp_rank;
  const int64_t C = d.attn_inner(), R = my.rows.size(), S = B.size.rows;
  const cuda::AttentionShape shape{.s_q = S, .s_kv = S, .heads = d.attn_heads, .head_dim = d.head_dim};
  timer_.begin("attention");
  OROCHI_RETURN_IF_ERROR(attend(B.qa.raw_data(), B.ka.raw_data(), B.va.raw_data(), B.oa.raw_data(), shape));
  timer_.end();
  OROCHI_RETURN_IF_ERROR(comm_after_compute());
  comm_timer_.begin("all_to_all o");
  for (int step = 1; step < n; ++step) OROCHI_RETURN_IF_ERROR(exchange_round(step, B.oa, B.q, false));
  comm_timer_.end();
  auto heads_of = [&](int j) { return to_out.weight.slice(1, j * C, (j + 1) * C); };  // [H, C] of [H, n * C]
  const Tensor* bias = to_out.bias.defined() ? &to_out.bias : nullptr;
  timer_.begin("gemm out");
  OROCHI_RETURN_IF_ERROR(gemm_->linear_strided(B.oa.slice(0, my.rows.begin, my.rows.end), heads_of(r), bias, out,
                                               /*accumulate=*/false, stream_));
  timer_.end();
  OROCHI_RETURN_IF_ERROR(compute_after_comm());
  timer_.begin("gemm out");
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    const Tensor theirs = B.q.view({-1}).slice(0, j * R * C, (j + 1) * R * C).view({R, C});  // my rows, j's heads
    OROCHI_RETURN_IF_ERROR(gemm_->linear_strided(theirs, heads_of(j), nullptr, out, /*accumulate=*/true, stream_));
  }
  timer_.end();
  return Status::ok();
}

}  // namespace orochi::h3::gpu
