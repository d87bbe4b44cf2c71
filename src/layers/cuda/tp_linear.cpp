#include "layers/cuda/tp_linear.h"

#include <algorithm>

#include "layers/cuda/comm_overlap.h"
#include "layers/cuda/stage_timer.h"

namespace orochi::layers::gpu {

Status tp_reduced_linear(const LayerContext& ctx, dist::Comm* tp, const GpuLinear& l, const Tensor& x, const Tensor& y,
                         const char* what) {
  if (!tp) {
    ctx.timer->begin(what);
    Status s = linear(ctx, l, x, y);
    ctx.timer->end();
    return s;
  }
  // Chunks of >= 4096 rows keep each GEMM efficient; all but the last chunk's all_reduce hide
  // under the following GEMMs.
  const int64_t rows = x.dim(0), H = y.dim(1);
  const int chunks = static_cast<int>(std::clamp<int64_t>(rows / 4096, 1, 8));
  for (int c = 0; c < chunks; ++c) {
    const dist::Range part = dist::even_share(rows, chunks, c);
    const Tensor y_part = y.slice(0, part.begin, part.end);  // [part, H]
    ctx.timer->begin(what);
    OROCHI_RETURN_IF_ERROR(linear(ctx, l, x.slice(0, part.begin, part.end), y_part));  // partial sums
    ctx.timer->end();
    OROCHI_RETURN_IF_ERROR(ctx.overlap->comm_after_compute());
    ctx.comm_timer->begin("all_reduce");
    Status s = tp->all_reduce_sum(y_part.raw_data(), part.size() * H, DType::kBF16);
    ctx.comm_timer->end();
    if (!s.is_ok()) return s.with_context(what);
  }
  return ctx.overlap->compute_after_comm(*ctx.timer);
}

}  // namespace orochi::layers::gpu
