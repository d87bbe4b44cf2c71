#include <cmath>
#include <vector>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops_llm.h"

namespace orochi::cpu {

Tensor causal_attention_gqa(const Tensor& q, const Tensor& k, const Tensor& v) {
  detail::require_f32_contiguous(q, "causal attention q");
  detail::require_f32_contiguous(k, "causal attention k");
  detail::require_f32_contiguous(v, "causal attention v");
  OROCHI_CHECK(q.ndim() == 3 && k.ndim() == 3 && k.shape() == v.shape() && q.dim(0) == k.dim(0) &&
                   q.dim(2) == k.dim(2) && k.dim(1) > 0 && q.dim(1) % k.dim(1) == 0,
               "causal attention shapes q ", q.describe(), " k ", k.describe(), " v ", v.describe());
  const int64_t S = q.dim(0), Hq = q.dim(1), Hkv = k.dim(1), D = q.dim(2), group = Hq / Hkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor out = Tensor::empty(q.shape(), DType::kF32);
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  float* po = out.data<float>();
#pragma omp parallel if (S * S * Hq * D / 2 > detail::kParallelWork)
  {
    std::vector<float> scores(S);
#pragma omp for schedule(dynamic) collapse(2)
    for (int64_t h = 0; h < Hq; ++h) {
      for (int64_t i = 0; i < S; ++i) {
        const int64_t kv =
            h / group;  // consecutive query heads share one kv head, as repeat_kv lays them out
        const float* qi = pq + (i * Hq + h) * D;
        float max_score = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          const float* kj = pk + (j * Hkv + kv) * D;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
          scores[j] = dot * scale;
          max_score = std::max(max_score, scores[j]);
        }
        float denom = 0.0f;
        for (int64_t j = 0; j <= i; ++j) {
          scores[j] = std::exp(scores[j] - max_score);
          denom += scores[j];
        }
        float* oi = po + (i * Hq + h) * D;
        for (int64_t j = 0; j <= i; ++j) {
          const float p = scores[j] / denom;
          const float* vj = pv + (j * Hkv + kv) * D;
          for (int64_t d = 0; d < D; ++d) oi[d] += p * vj[d];
        }
      }
    }
  }
  return out;
}

}  // namespace orochi::cpu
