// NCCL results as Status values with advice, and the NCCL element type of a DType.
#pragma once

#include <nccl.h>

#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace orochi::dist {

// `what` returned `result`: an i/o-error Status with NCCL's description, its last message and what
// to try next.
Status nccl_status(ncclResult_t result, const std::string& what);

// The NCCL type that sums `dtype`: f32, f64, bf16, f16, i64 and i32, as CPU ranks do. Unsupported
// otherwise (fp8's per-tensor scales make a plain element sum meaningless).
Expected<ncclDataType_t> nccl_sum_type(DType dtype);

}  // namespace orochi::dist
