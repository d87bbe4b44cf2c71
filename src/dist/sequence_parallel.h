// Ulysses sequence-parallel exchanges of host f32 tensors over a CPU or host-staged Comm.
// Rank r of P owns the packed rows even_share(S, P, r) (contiguous, uneven allowed). Around
// attention the rows are traded for heads: rank j then holds every row of heads [j·h/P, (j+1)·h/P)
// of the h heads its peers hold. A null comm means one rank: the tensors pass through.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "dist/comm.h"

namespace orochi::dist {

// This rank's packed rows of `rows`.
Range own_rows(int64_t rows, const Comm* sp);

// x [S_own, h, d] (own rows, all heads) -> [S, h/P, d] (all rows, this rank's head group).
// invalid_argument when P does not divide h.
Expected<Tensor> rows_to_heads(const Tensor& x, Comm* sp, int64_t rows);
// The inverse: x [S, h/P, d] -> [S_own, h, d].
Expected<Tensor> heads_to_rows(const Tensor& x, Comm* sp, int64_t rows);
// x [S_own, C] -> [S, C], the same on every rank.
Expected<Tensor> gather_row_shares(const Tensor& x, Comm* sp, int64_t rows);

// In place: x = sum over the group's ranks of x (tensor-parallel partial sums). Contiguous f32.
Status sum_partials(Tensor& x, Comm* tp);

}  // namespace orochi::dist
