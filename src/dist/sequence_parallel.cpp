#include "dist/sequence_parallel.h"

#include <cstring>
#include <vector>

namespace orochi::dist {
namespace {

struct Plan {
  std::vector<int64_t> send_counts, send_offsets, recv_counts, recv_offsets;
};

int ranks_of(const Comm* c) { return c ? c->size() : 1; }

void require_f32(const Tensor& x, int ndim, const char* what) {
  OROCHI_CHECK(x.defined() && x.dtype() == DType::kF32 && x.is_contiguous() && x.ndim() == ndim, what,
               " needs a contiguous f32 tensor of ", ndim, " dims, got ", x.defined() ? x.describe() : "nothing");
}

Status heads_divide(int64_t heads, const Comm& sp) {
  if (heads % sp.size() == 0) return Status::ok();
  return invalid_argument(std::to_string(heads) + " heads per rank do not split over the " + std::to_string(sp.size()) +
                          " sequence-parallel ranks of group '" + sp.name() +
                          "'; choose a sequence-parallel size that divides the heads left after tensor parallelism");
}

}  // namespace

Range own_rows(int64_t rows, const Comm* sp) { return sp ? even_share(rows, sp->size(), sp->rank()) : Range{0, rows}; }

Expected<Tensor> rows_to_heads(const Tensor& x, Comm* sp, int64_t rows) {
  require_f32(x, 3, "rows_to_heads");
  if (ranks_of(sp) == 1) return x;
  OROCHI_RETURN_IF_ERROR(heads_divide(x.dim(1), *sp));
  const int P = sp->size();
  const int64_t n = x.dim(0), hp = x.dim(1) / P, d = x.dim(2), run = hp * d;  // run: one row of one head group
  OROCHI_CHECK(n == own_rows(rows, sp).size(), "rows_to_heads: ", n, " rows, but this rank owns ",
               own_rows(rows, sp).size(), " of ", rows);
  // Send buffer [P, n, hp, d]: destination j's block holds head group j of every own row.
  Tensor send = Tensor::empty({P, n, hp, d}, DType::kF32);
  const float* src = x.data<float>();
  float* dst = send.data<float>();
  for (int j = 0; j < P; ++j)
    for (int64_t s = 0; s < n; ++s) std::memcpy(dst + (j * n + s) * run, src + (s * P + j) * run, run * sizeof(float));
  Tensor out = Tensor::empty({rows, hp, d}, DType::kF32);  // [S, hp, d], rows in rank order
  Plan p;
  for (int j = 0; j < P; ++j) {
    const Range theirs = even_share(rows, P, j);
    p.send_counts.push_back(n * run);
    p.send_offsets.push_back(j * n * run);
    p.recv_counts.push_back(theirs.size() * run);
    p.recv_offsets.push_back(theirs.begin * run);
  }
  OROCHI_RETURN_IF_ERROR(sp->all_to_all(send.data<float>(), p.send_counts, p.send_offsets, out.data<float>(),
                                        p.recv_counts, p.recv_offsets, DType::kF32));
  return out;
}

Expected<Tensor> heads_to_rows(const Tensor& x, Comm* sp, int64_t rows) {
  require_f32(x, 3, "heads_to_rows");
  if (ranks_of(sp) == 1) return x;
  const int P = sp->size();
  const int64_t hp = x.dim(1), d = x.dim(2), run = hp * d;
  const int64_t n = own_rows(rows, sp).size();
  OROCHI_CHECK(x.dim(0) == rows, "heads_to_rows: ", x.dim(0), " rows, expected all ", rows);
  // Receive buffer [P, n, hp, d]: source j's block is head group j of the own rows.
  Tensor recv = Tensor::empty({P, n, hp, d}, DType::kF32);
  Plan p;
  for (int j = 0; j < P; ++j) {
    const Range theirs = even_share(rows, P, j);
    p.send_counts.push_back(theirs.size() * run);
    p.send_offsets.push_back(theirs.begin * run);
    p.recv_counts.push_back(n * run);
    p.recv_offsets.push_back(j * n * run);
  }
  OROCHI_RETURN_IF_ERROR(sp->all_to_all(x.data<float>(), p.send_counts, p.send_offsets, recv.data<float>(),
                                        p.recv_counts, p.recv_offsets, DType::kF32));
  Tensor out = Tensor::empty({n, P * hp, d}, DType::kF32);  // [S_own, h, d]
  const float* src = recv.data<float>();
  float* dst = out.data<float>();
  for (int j = 0; j < P; ++j)
    for (int64_t s = 0; s < n; ++s) std::memcpy(dst + (s * P + j) * run, src + (j * n + s) * run, run * sizeof(float));
  return out;
}

Expected<Tensor> gather_row_shares(const Tensor& x, Comm* sp, int64_t rows) {
  require_f32(x, 2, "gather_row_shares");
  if (ranks_of(sp) == 1) return x;
  const int P = sp->size();
  const int64_t n = x.dim(0), C = x.dim(1);
  OROCHI_CHECK(n == own_rows(rows, sp).size(), "gather_row_shares: ", n, " rows, but this rank owns ",
               own_rows(rows, sp).size(), " of ", rows);
  // Uneven shares: an all_to_all that sends the same block to everyone is an all_gather with
  // variable counts.
  Tensor out = Tensor::empty({rows, C}, DType::kF32);
  Plan p;
  for (int j = 0; j < P; ++j) {
    const Range theirs = even_share(rows, P, j);
    p.send_counts.push_back(n * C);
    p.send_offsets.push_back(0);
    p.recv_counts.push_back(theirs.size() * C);
    p.recv_offsets.push_back(theirs.begin * C);
  }
  OROCHI_RETURN_IF_ERROR(sp->all_to_all(x.data<float>(), p.send_counts, p.send_offsets, out.data<float>(),
                                        p.recv_counts, p.recv_offsets, DType::kF32));
  return out;
}

Status sum_partials(Tensor& x, Comm* tp) {
  require_f32(x, x.ndim(), "sum_partials");
  if (ranks_of(tp) == 1) return Status::ok();
  return tp->all_reduce_sum(x.data<float>(), x.numel(), DType::kF32);
}

}  // namespace orochi::dist
