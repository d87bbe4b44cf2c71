// Shape/dtype checks shared by the CPU ops. A failure is a caller bug (models validate user input
// before calling ops), so these are invariant checks with file:line.
#pragma once

#include "core/tensor.h"

namespace orochi::cpu::detail {

// Below this many multiply-adds a loop stays on one thread: waking the pool costs more.
inline constexpr int64_t kParallelWork = int64_t{1} << 18;

inline void require_f32_contiguous(const Tensor& t, const char* what) {
  OROCHI_CHECK(t.defined() && t.dtype() == DType::kF32 && t.is_contiguous(), what,
               " must be a contiguous f32 tensor, got ", t.defined() ? t.describe() : "undefined");
}

// A 2-D f32 view whose columns are dense but whose rows may be spaced apart.
inline void require_row_strided(const Tensor& t, int64_t cols, const char* what) {
  OROCHI_CHECK(t.defined() && t.dtype() == DType::kF32 && t.ndim() == 2 && t.dim(1) == cols &&
                   t.strides()[1] == 1,
               what, " must be a row-strided f32 [R, ", cols, "] table, got ", t.describe());
}

// Checks every index is in [0, limit) and returns the data pointer.
inline const int64_t* checked_indices(const Tensor& idx, int64_t limit, const char* what) {
  OROCHI_CHECK(idx.dtype() == DType::kI64 && idx.ndim() == 1 && idx.is_contiguous(), what,
               " must be a contiguous i64 vector, got ", idx.describe());
  const int64_t* p = idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i)
    OROCHI_CHECK(p[i] >= 0 && p[i] < limit, what, "[", i, "] = ", p[i], " outside [0, ", limit, ")");
  return p;
}

}  // namespace orochi::cpu::detail
