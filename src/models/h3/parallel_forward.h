// The H3 forward over tensor-parallel (TP) and Ulysses sequence-parallel (SP) ranks: the same
// math as h3::forward, every rank returning the full outputs.
//   TP: each rank computes its heads' q/k/v and attention and a partial out-projection, summed
//       over the TP group by all_reduce; the FFN likewise (its slice of the SwiGLU width, partial
//       ff_out, all_reduce). Weights come from shard_weights (parallel_shard.h).
//   SP: rank r of P owns packed rows even_share(S, P, r) for norms, modulation, projections,
//       qk-norm, RoPE and the FFN; an all_to_all trades rows for heads around attention (every row,
//       h/P of this TP rank's heads) and back. The small text refiner runs on every SP rank over
//       all text rows. The final norm's rows are gathered so each rank computes both heads.
// With TP x SP each world rank is in one TP group (same rows, different heads) and one SP group
// (same TP shard, different rows).
#pragma once

#include "core/status.h"
#include "dist/comm.h"
#include "models/h3/transformer.h"

namespace orochi::h3 {

struct ParallelGroups {
  dist::Comm* tp = nullptr;  // null: 1 rank
  dist::Comm* sp = nullptr;  // null: 1 rank
};

// `shard` is this rank's shard_weights(full, tp->rank(), tp->size()); `tables` come from the full
// weights (compute_modulation_tables on the shard gives the same: the AdaLN weights are replicated).
// invalid_argument when the layout does not divide the heads (check_parallel_layout), when the
// shard does not match the TP group, or when there are fewer packed rows than SP ranks. Comm failures come
// back as the comm's error (kDeadline) with the failing layer as context.
Expected<H3Outputs> forward_parallel(const H3Weights& shard, const H3Inputs& in, const ModulationTables& tables,
                                     const ParallelGroups& groups);

}  // namespace orochi::h3
