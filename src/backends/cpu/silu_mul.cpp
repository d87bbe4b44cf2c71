#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_llm.h"

namespace orochi::cpu {

Tensor silu_mul(const Tensor& gate, const Tensor& up) {
  detail::require_f32_contiguous(gate, "silu_mul gate");
  detail::require_f32_contiguous(up, "silu_mul up");
  OROCHI_CHECK(gate.shape() == up.shape(), "silu_mul shapes ", gate.describe(), " vs ", up.describe());
  Tensor y = Tensor::empty(gate.shape(), DType::kF32);
  const float* pg = gate.data<float>();
  const float* pu = up.data<float>();
  float* py = y.data<float>();
  const int64_t n = gate.numel();
#pragma omp parallel for schedule(static) if (n > detail::kParallelWork)
  for (int64_t i = 0; i < n; ++i) py[i] = pg[i] / (1.0f + std::exp(-pg[i])) * pu[i];
  return y;
}

}  // namespace orochi::cpu
