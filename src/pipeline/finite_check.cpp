#include "pipeline/finite_check.h"

#include <cmath>

namespace orochi::pipeline {

Status check_finite(const Tensor& t, const std::string& stage) {
  if (!t.defined()) return Status::ok();
  const Tensor dense = t.dtype() == DType::kF32 ? t.contiguous() : t.to(DType::kF32);
  const float* p = dense.data<float>();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < dense.numel(); ++i)
    if (!std::isfinite(p[i])) {
      if (first < 0) first = i;
      ++bad;
    }
  if (bad == 0) return Status::ok();
  return Status(ErrorCode::kNonFinite,
                stage + " produced " + std::to_string(bad) + " non-finite value" + (bad == 1 ? "" : "s") + " of " +
                    std::to_string(dense.numel()) + " (the first at flat index " + std::to_string(first) +
                    "); the weights or inputs are broken (a corrupt or wrongly converted checkpoint, or text features "
                    "out of range): nothing was written");
}

}  // namespace orochi::pipeline
