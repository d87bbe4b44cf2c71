// Qwen3-VL's interleaved multi-axis rotary table. The reference computes each axis's angles for every
// slot and then, per axis h and w, overwrites the t angles at slots slice(axis, 3 · section[axis], 3);
// Python slicing clamps the end at F, reproduced here.
#include <algorithm>
#include <cmath>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_llm.h"

namespace orochi::cpu {

std::vector<int> mrope_interleaved_axes(int64_t freq_slots, const std::array<int64_t, 3>& section) {
  OROCHI_CHECK(freq_slots > 0 && section[1] >= 0 && section[2] >= 0, "mrope: ", freq_slots,
               " slots, section [", section[0], ", ", section[1], ", ", section[2], "]");
  std::vector<int> axis(static_cast<size_t>(freq_slots), 0);
  for (int a = 1; a <= 2; ++a) {
    const int64_t end = std::min(3 * section[a], freq_slots);
    for (int64_t f = a; f < end; f += 3) axis[static_cast<size_t>(f)] = a;
  }
  return axis;
}

RopeTable mrope_interleaved_table(const Tensor& positions, const Tensor& inv_freq,
                                  const std::array<int64_t, 3>& section) {
  detail::require_f32_contiguous(inv_freq, "mrope inv_freq");
  OROCHI_CHECK(positions.defined() && positions.dtype() == DType::kI64 && positions.ndim() == 2 &&
                   positions.dim(1) == 3 && positions.is_contiguous(),
               "mrope positions must be contiguous i64 [S, 3], got ",
               positions.defined() ? positions.describe() : "undefined");
  const int64_t S = positions.dim(0), F = inv_freq.numel(), R = 2 * F;
  const std::vector<int> axis = mrope_interleaved_axes(F, section);
  RopeTable table{Tensor::empty({S, R}, DType::kF32), Tensor::empty({S, R}, DType::kF32)};
  const int64_t* pp = positions.data<int64_t>();
  const float* pf = inv_freq.data<float>();
  float* pc = table.cos.data<float>();
  float* ps = table.sin.data<float>();
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t f = 0; f < F; ++f) {
      // fp32 product of the float position and the frequency, as position_ids.float() * inv_freq.
      const float angle = static_cast<float>(pp[s * 3 + axis[static_cast<size_t>(f)]]) * pf[f];
      pc[s * R + f] = pc[s * R + f + F] = std::cos(angle);
      ps[s * R + f] = ps[s * R + f + F] = std::sin(angle);
    }
  }
  return table;
}

}  // namespace orochi::cpu
