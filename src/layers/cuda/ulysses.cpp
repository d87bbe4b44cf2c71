#include "layers/cuda/ulysses.h"

#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernels/kernels.h"
#include "layers/cuda/attention.h"
#include "layers/cuda/comm_overlap.h"
#include "layers/cuda/stage_timer.h"

namespace orochi::layers::gpu {
namespace {

using cuda::kernels::bf16;

Status launched(cudaError_t err, const char* what) { return cuda::cuda_status(err, what); }

// Rows [j * C, (j + 1) * C) of a linear's weight: the heads of one SP chunk.
GpuLinear out_rows(const GpuLinear& l, int64_t j, int64_t C) { return {l.weight.slice(0, j * C, (j + 1) * C), {}}; }

}  // namespace

// Round `step` of the exchange between this rank r, peer p = r + step and source s = r - step
// (mod sp). to_heads: my rows of p's heads (slot p of `send`, [sp, R, C]) go to p; s's rows of my
// heads land in their rows of `recv` [S, C]. Back: rows of p in `send` [S, C] go to p; my rows of
// s's heads land in slot s of `recv`.
Status UlyssesExchange::exchange_round(int step, const Tensor& send, const Tensor& recv, bool to_heads) {
  const int n = shape_.size, r = shape_.rank, p = (r + step) % n, src = (r - step + n) % n;
  const int64_t C = shape_.inner(), R = shape_.rows.size();
  const std::span<const dist::Range> shares = shape_.shares;
  std::vector<int64_t> send_counts(n, 0), send_offsets(n, 0), recv_counts(n, 0), recv_offsets(n, 0);
  if (to_heads) {
    send_counts[p] = R * C, send_offsets[p] = p * R * C;
    recv_counts[src] = shares[src].size() * C, recv_offsets[src] = shares[src].begin * C;
  } else {
    send_counts[p] = shares[p].size() * C, send_offsets[p] = shares[p].begin * C;
    recv_counts[src] = R * C, recv_offsets[src] = src * R * C;
  }
  return sp_.all_to_all(send.raw_data(), send_counts, send_offsets, recv.raw_data(), recv_counts, recv_offsets,
                        DType::kBF16);
}

// Each peer's chunk of heads is projected (q, k and v in one batched GEMM) and sent while the next
// chunk's GEMM runs; this rank's own chunk comes last, under the tail of the exchanges.
Status UlyssesExchange::qkv_by_heads(const GpuLinear (&w)[3], const Tensor& x, const QkvProjection& project) {
  const int n = shape_.size, r = shape_.rank;
  const int64_t C = shape_.inner(), R = shape_.rows.size();
  auto slot = [&](const Tensor& t, int j) { return t.view({-1}).slice(0, j * R * C, (j + 1) * R * C).view({R, C}); };
  // This rank's rows of chunk j of the heads, into out[0..2] [R, C].
  auto project_chunk = [&](int j, const Tensor (&out)[3]) -> Status {
    const GpuLinear wj[] = {out_rows(w[0], j, C), out_rows(w[1], j, C), out_rows(w[2], j, C)};
    return project(wj, x, out, shape_.rows.begin);
  };
  for (int step = 1; step < n; ++step) {
    const int p = (r + step) % n;
    const Tensor out[] = {slot(b_.q, p), slot(b_.k, p), slot(b_.v, p)};
    OROCHI_RETURN_IF_ERROR(project_chunk(p, out));
    OROCHI_RETURN_IF_ERROR(ctx_.overlap->comm_after_compute());
    ctx_.comm_timer->begin("all_to_all qkv");
    OROCHI_RETURN_IF_ERROR(exchange_round(step, b_.q, b_.qa, true));
    OROCHI_RETURN_IF_ERROR(exchange_round(step, b_.k, b_.ka, true));
    OROCHI_RETURN_IF_ERROR(exchange_round(step, b_.v, b_.va, true));
    ctx_.comm_timer->end();
  }
  auto my_rows = [&](const Tensor& t) { return t.slice(0, shape_.rows.begin, shape_.rows.end); };
  const Tensor mine[] = {my_rows(b_.qa), my_rows(b_.ka), my_rows(b_.va)};
  OROCHI_RETURN_IF_ERROR(project_chunk(r, mine));
  return ctx_.overlap->compute_after_comm(*ctx_.timer);
}

// H values per row cross the link instead of the heads scheme's 3 * C per peer.
Status UlyssesExchange::qkv_by_gathered_rows(const GpuLinear (&w)[3], const Tensor& x, const QkvProjection& project) {
  const int n = shape_.size, r = shape_.rank;
  const int64_t C = shape_.inner(), H = x.dim(1), R = shape_.rows.size();
  const std::span<const dist::Range> shares = shape_.shares;
  // xa holds the peers' rows in row order, without this rank's: row i lands at i, or i - R past mine.
  auto xa_row = [&](int64_t row) { return row < shape_.rows.begin ? row : row - R; };
  std::vector<int64_t> send_counts(n, R * H), send_offsets(n, 0), recv_counts(n, 0), recv_offsets(n, 0);
  send_counts[r] = 0;
  for (int j = 0; j < n; ++j)
    if (j != r) recv_counts[j] = shares[j].size() * H, recv_offsets[j] = xa_row(shares[j].begin) * H;
  OROCHI_RETURN_IF_ERROR(ctx_.overlap->comm_after_compute());
  ctx_.comm_timer->begin("all_gather x");
  OROCHI_RETURN_IF_ERROR(sp_.all_to_all(x.raw_data(), send_counts, send_offsets, b_.xa.raw_data(), recv_counts,
                                        recv_offsets, DType::kBF16));
  ctx_.comm_timer->end();
  const GpuLinear wr[] = {out_rows(w[0], r, C), out_rows(w[1], r, C), out_rows(w[2], r, C)};
  // Rows `rows` of the packed sequence from `in` [rows, H].
  auto project_rows = [&](const dist::Range& rows, const Tensor& in) -> Status {
    auto part = [&](const Tensor& t) { return t.slice(0, rows.begin, rows.end); };
    const Tensor out[] = {part(b_.qa), part(b_.ka), part(b_.va)};  // [rows, C]
    return project(wr, in, out, rows.begin);
  };
  OROCHI_RETURN_IF_ERROR(project_rows(shape_.rows, x));
  OROCHI_RETURN_IF_ERROR(ctx_.overlap->compute_after_comm(*ctx_.timer));
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    const int64_t first = xa_row(shares[j].begin);
    OROCHI_RETURN_IF_ERROR(project_rows(shares[j], b_.xa.slice(0, first, first + shares[j].size())));
  }
  return Status::ok();
}

// The peers' shares of query rows first, each sent back while the next share computes, this
// rank's own share last.
Status UlyssesExchange::attention() {
  const int n = shape_.size, r = shape_.rank;
  const int64_t C = shape_.inner(), R = shape_.rows.size(), S = shape_.total_rows;
  const size_t row = static_cast<size_t>(C) * sizeof(bf16);
  auto attend_share = [&](int j) -> Status {
    const dist::Range q_rows = shape_.shares[j];
    const cuda::AttentionShape shape{.s_q = q_rows.size(), .s_kv = S, .heads = shape_.heads, .head_dim = shape_.head_dim};
    ctx_.timer->begin("attention");
    Status s = ctx_.attention->attend(static_cast<const char*>(b_.qa.raw_data()) + q_rows.begin * row, b_.ka.raw_data(),
                                      b_.va.raw_data(), static_cast<char*>(b_.oa.raw_data()) + q_rows.begin * row, shape);
    ctx_.timer->end();
    return s;
  };
  // [rows, C] at `src` (pitch C) into columns [j * C, (j + 1) * C) of o; a kernel, not a 2D
  // memcpy, which runs on the copy engines at a fraction of the bandwidth.
  auto place = [&](const void* src, int j) {
    ctx_.timer->begin("ulysses unpack");
    Status s = launched(cuda::kernels::launch_copy_rows(static_cast<char*>(b_.o.raw_data()) + j * row, n * row, nullptr,
                                                        src, row, nullptr, R, row, ctx_.stream),
                        "ulysses unpack");
    ctx_.timer->end();
    return s;
  };
  for (int step = 1; step < n; ++step) {
    OROCHI_RETURN_IF_ERROR(attend_share((r + step) % n));
    OROCHI_RETURN_IF_ERROR(ctx_.overlap->comm_after_compute());
    ctx_.comm_timer->begin("all_to_all o");
    OROCHI_RETURN_IF_ERROR(exchange_round(step, b_.oa, b_.q, false));
    ctx_.comm_timer->end();
  }
  OROCHI_RETURN_IF_ERROR(attend_share(r));
  OROCHI_RETURN_IF_ERROR(place(static_cast<const char*>(b_.oa.raw_data()) + shape_.rows.begin * row, r));
  OROCHI_RETURN_IF_ERROR(ctx_.overlap->compute_after_comm(*ctx_.timer));
  for (int j = 0; j < n; ++j)
    if (j != r) OROCHI_RETURN_IF_ERROR(place(static_cast<const char*>(b_.q.raw_data()) + j * R * row, j));
  return Status::ok();
}

// One attention launch's tail instead of one per SP share; the peers' heads' products accumulate
// into out as they are waited for.
Status UlyssesExchange::attention_out(const GpuLinear& to_out, const Tensor& out) {
  const int n = shape_.size, r = shape_.rank;
  const int64_t C = shape_.inner(), R = shape_.rows.size(), S = shape_.total_rows;
  const cuda::AttentionShape shape{.s_q = S, .s_kv = S, .heads = shape_.heads, .head_dim = shape_.head_dim};
  ctx_.timer->begin("attention");
  OROCHI_RETURN_IF_ERROR(ctx_.attention->attend(b_.qa.raw_data(), b_.ka.raw_data(), b_.va.raw_data(), b_.oa.raw_data(), shape));
  ctx_.timer->end();
  OROCHI_RETURN_IF_ERROR(ctx_.overlap->comm_after_compute());
  ctx_.comm_timer->begin("all_to_all o");
  for (int step = 1; step < n; ++step) OROCHI_RETURN_IF_ERROR(exchange_round(step, b_.oa, b_.q, false));
  ctx_.comm_timer->end();
  auto heads_of = [&](int j) { return to_out.weight.slice(1, j * C, (j + 1) * C); };  // [H, C] of [H, n * C]
  const Tensor* bias = to_out.bias.defined() ? &to_out.bias : nullptr;
  ctx_.timer->begin("gemm out");
  OROCHI_RETURN_IF_ERROR(ctx_.gemm->linear_strided(b_.oa.slice(0, shape_.rows.begin, shape_.rows.end), heads_of(r), bias,
                                                   out, /*accumulate=*/false, ctx_.stream));
  ctx_.timer->end();
  OROCHI_RETURN_IF_ERROR(ctx_.overlap->compute_after_comm(*ctx_.timer));
  ctx_.timer->begin("gemm out");
  for (int j = 0; j < n; ++j) {
    if (j == r) continue;
    const Tensor theirs = b_.q.view({-1}).slice(0, j * R * C, (j + 1) * R * C).view({R, C});  // my rows, j's heads
    OROCHI_RETURN_IF_ERROR(ctx_.gemm->linear_strided(theirs, heads_of(j), nullptr, out, /*accumulate=*/true, ctx_.stream));
  }
  ctx_.timer->end();
  return Status::ok();
}

}  // namespace orochi::layers::gpu
