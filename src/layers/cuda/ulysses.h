// Ulysses sequence parallelism on the GPU: each SP rank holds its rows of the packed sequence;
// around attention they are traded for heads (every row of 1/sp of the heads), attention runs over
// all rows, and the output goes back to its rows. Every exchange is enqueued on the comm stream,
// overlapped with the projections and attention shares that do not need it.
//
// The layer moves bytes and calls attention; the model projects: QkvProjection writes q, k, v of
// some rows for one chunk of heads, already normalized and rotated as the family does it (H3:
// per-head RMSNorm and RoPE), so nothing is left to do to them after the exchange.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "dist/comm.h"
#include "layers/cuda/layer_context.h"
#include "layers/cuda/linear.h"

namespace orochi::layers::gpu {

// One SP rank's part of the exchange.
struct UlyssesShape {
  int rank = 0, size = 1;                 // in the SP group
  dist::Range rows;                       // this rank's packed rows [begin, end): R of them
  std::span<const dist::Range> shares;    // every rank's rows, in rank order (uneven allowed)
  int64_t total_rows = 0;                 // S
  int64_t heads = 0, head_dim = 0;        // the heads this rank attends over (its TP heads / size)
  int64_t inner() const { return heads * head_dim; }  // C
};

// The model's buffers for it (bf16, from its request arena; R = shape.rows.size()).
struct UlyssesBuffers {
  Tensor q, k, v;     // >= [size, R, C]: this rank's rows of each rank's heads (heads scheme); q
                      // then receives this rank's rows of the peers' heads of the attention output
  Tensor qa, ka, va;  // [S, C]: all rows of this rank's heads
  Tensor oa;          // [S, C]: their attention output
  Tensor o;           // [R, size * C]: this rank's rows of every head (attention())
  Tensor xa;          // [S - R, H]: the peers' rows of the attention input (gathered-rows scheme)
};

// q, k, v of rows x [n, H] through weights w[0..2] (each [C, H], one chunk of heads) into out[0..2]
// [n, C], then q and k normalized and rotated with the angles of packed rows [first_row, first_row + n).
using QkvProjection =
    std::function<Status(const GpuLinear (&w)[3], const Tensor& x, const Tensor (&out)[3], int64_t first_row)>;

// Borrows its arguments for its life: build it where they live, for one attention.
class UlyssesExchange {
 public:
  UlyssesExchange(const LayerContext& ctx, dist::Comm& sp, const UlyssesShape& shape, const UlyssesBuffers& buffers)
      : ctx_(ctx), sp_(sp), shape_(shape), b_(buffers) {}

  // q, k, v of all S rows of this rank's heads into qa/ka/va, from this rank's rows x [R, H] and
  // the full projections w (to_q, to_k, to_v: [size * C, H] each), by one of two schemes with the
  // same arithmetic:
  //   heads: this rank projects every rank's heads of its own rows and sends the chunks
  //     (3 * C values per row per peer), each peer's chunk while the next one's GEMM runs;
  //   gathered rows: this rank's rows of x go to every peer (H values per row) while it projects
  //     its own rows; then it projects the peers' rows of its own heads.
  Status qkv_by_heads(const GpuLinear (&w)[3], const Tensor& x, const QkvProjection& project);
  Status qkv_by_gathered_rows(const GpuLinear (&w)[3], const Tensor& x, const QkvProjection& project);

  // Attention of this rank's heads over all S rows, one share of query rows at a time (each sent
  // back while the next computes), ending with this rank's rows of every head in o [R, size * C]
  // for the out-projection (which a TP group then reduces).
  Status attention();
  // Without TP: one attention call over all S rows, then out [R, H] = sum over ranks j of (this
  // rank's rows of j's heads) · to_out[:, j's heads]^T: its own heads first (with the bias) while
  // the exchange brings the peers' heads of its rows.
  Status attention_out(const GpuLinear& to_out, const Tensor& out);

 private:
  Status exchange_round(int step, const Tensor& send, const Tensor& recv, bool to_heads);

  const LayerContext& ctx_;
  dist::Comm& sp_;
  const UlyssesShape& shape_;
  const UlyssesBuffers& b_;
};

}  // namespace orochi::layers::gpu
