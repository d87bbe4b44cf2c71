// How MiniMax-H3's weights and rows split over a tensor-parallel x sequence-parallel layout. The
// CPU ranks (parallel_forward.h) and the GPUs (cuda/gpu_runner.h) use the same rules, so a layout
// computes the same model whatever runs it:
//   TP: to_q/to_k/to_v keep whole heads (rows of [inner, H]); ff.net.0.proj keeps the same FFN
//       range of both SwiGLU halves ([value | gate] rows); to_out and ff.net.2 keep the matching
//       input columns and their outputs are summed over the TP group. Everything else is replicated.
//   SP (Ulysses): packed rows are split evenly (uneven allowed; on GPUs optionally in proportion
//       to given weights); around attention an all_to_all trades [own rows, all local heads] for
//       [all rows, local heads / sp].
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "dist/comm.h"
#include "dist/parallel_options.h"
#include "models/h3/config.h"

namespace orochi::h3 {

struct ParallelRank {
  int tp_rank = 0, tp_size = 1, sp_rank = 0, sp_size = 1;
  // Relative speeds of the SP ranks, whose row shares follow them (GPUs of one model can run at
  // different clocks under the same power cap); empty: an even split.
  std::vector<double> sp_weights = {};
  int world_size() const { return tp_size * sp_size; }
};

// Every SP rank's packed rows of `rows`: dist::even_share, or dist::weighted_share by sp_weights.
std::vector<dist::Range> sp_row_shares(int64_t rows, const ParallelRank& rank);

// What is wrong with SP row weights ("" when nothing): they need one positive, finite weight per
// SP rank, each in [0.5, 2] of their mean.
std::string sp_weights_problem(const std::vector<double>& weights, int sp_size);


// Heads must split over TP and, per TP rank, again over SP; says which sizes would work.
Status check_parallel_layout(const H3Config& c, int tp_size, int sp_size);

// How SP ranks bring q, k and v of all rows of their heads together. Gathering the rows of the
// attention input (H values per row to every peer; each rank projects its own heads) moves fewer
// bytes than exchanging q/k/v chunks of every rank's heads (3 * inner / (tp * sp) per row per
// peer) while tp * sp * H < 3 * inner: for H3, SP2 without TP; SP4 and TP2 x SP2 move the same,
// SP8 twice as much.
enum class SpQkvScheme { kGatherRows, kHeadChunks };
SpQkvScheme fewer_bytes_sp_qkv(const H3Config& c, int tp_size, int sp_size);

// Whether a layout's SP ranks gather the attention input's rows (memory: the peers' rows buffer)
// under the sp-qkv switch: auto takes fewer_bytes_sp_qkv's scheme. False without SP.
bool sp_gathers_rows(const H3Config& c, int tp_size, int sp_size, dist::SpQkv choice);

// What one TP rank holds of every block: whole heads, and a share of the SwiGLU width.
struct TpShare {
  dist::Range heads, ffn;
};
TpShare tp_share(const H3Config& c, int tp_rank, int tp_size);

// How one named parameter (diffusers name) is cut for a TP rank.
struct TpSlice {
  enum class Kind { kReplicated, kOutRows, kOutRowsBothHalves, kInColumns };
  Kind kind = Kind::kReplicated;
  dist::Range range;  // rows (kOutRows*) or columns (kInColumns) kept
  int64_t half = 0;   // kOutRowsBothHalves: rows of the first half (the second starts there)
};
TpSlice tp_slice_of(const std::string& name, const H3Config& c, const TpShare& share);
Shape tp_local_shape(const Shape& full, const TpSlice& slice);
// The rank's part of a host tensor, contiguous (shares storage when replicated).
Tensor tp_slice_host(const Tensor& full, const TpSlice& slice);

}  // namespace orochi::h3
