#include <cstring>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_llm.h"

namespace orochi::cpu {

Tensor embedding_lookup(const Tensor& table, const Tensor& ids) {
  OROCHI_CHECK(table.defined() && table.ndim() == 2 && table.is_contiguous() && dtype_is_float(table.dtype()),
               "embedding table must be a contiguous float [V, C] tensor, got ",
               table.defined() ? table.describe() : "undefined");
  const int64_t V = table.dim(0), C = table.dim(1);
  const int64_t* idx = detail::checked_indices(ids, V, "token ids");
  const int64_t n = ids.numel();
  Tensor out = Tensor::empty({n, C}, DType::kF32);
  const auto* base = static_cast<const uint8_t*>(table.raw_data());
  const size_t row_bytes = static_cast<size_t>(C) * dtype_size(table.dtype());
  for (int64_t i = 0; i < n; ++i)
    convert_to_f32(table.dtype(), base + static_cast<size_t>(idx[i]) * row_bytes, out.data<float>() + i * C,
                   static_cast<size_t>(C), table.scale());
  return out;
}

}  // namespace orochi::cpu
