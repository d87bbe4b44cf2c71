// Tensor-parallel slicing of the H3 weights at load, by the rules of tensor_parallel.h (shared
// with the GPU path): each of N ranks keeps 1/N of every block linear (transformer and refiner
// blocks) and everything else whole.
//   to_q / to_k / to_v   whole heads (rows of the [out, in] weight)
//   ff_in [2F, H]        the same FFN range of both SwiGLU halves [value | gate]; the width F
//                        splits as dist::even_share (uneven allowed)
//   to_out, ff_out       the matching input columns; a bias stays on TP rank 0 only, so the
//                        all_reduce of the partial outputs adds it once
//   norms, patch projections, heads, time MLP, AdaLN projections: replicated (every rank builds
//                        the full modulation tables)
#pragma once

#include "core/status.h"
#include "models/h3/weights.h"

namespace orochi::h3 {

// Rank `tp_rank`'s shard. Row slices and replicated tensors view the full weights' buffers
// (in-process ranks share host memory); column slices are copies. tp_size 1 returns `full`.
// invalid_argument, naming the sizes that would work, when tp_size does not divide the heads or
// exceeds the FFN width, and for a rank outside [0, tp_size).
Expected<H3Weights> shard_weights(const H3Weights& full, int tp_rank, int tp_size);

}  // namespace orochi::h3
