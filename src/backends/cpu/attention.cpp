#include <cmath>
#include <vector>

#include "backends/cpu/op_checks.h"
#include "backends/cpu/ops.h"

namespace orochi::cpu {

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  detail::require_f32_contiguous(q, "attention q");
  detail::require_f32_contiguous(k, "attention k");
  detail::require_f32_contiguous(v, "attention v");
  OROCHI_CHECK(q.ndim() == 3 && k.shape() == v.shape() && k.ndim() == 3 && q.dim(1) == k.dim(1) &&
                   q.dim(2) == k.dim(2),
               "attention shapes q ", q.describe(), " k ", k.describe(), " v ", v.describe());
  const int64_t Sq = q.dim(0), Sk = k.dim(0), H = q.dim(1), D = q.dim(2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Tensor out = Tensor::empty(q.shape(), DType::kF32);
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  float* po = out.data<float>();
#pragma omp parallel if (Sq * Sk * H * D > detail::kParallelWork)
  {
    std::vector<float> scores(Sk);
#pragma omp for schedule(static) collapse(2)
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < Sq; ++i) {
        const float* qi = pq + (i * H + h) * D;
        float max_score = -INFINITY;
        for (int64_t j = 0; j < Sk; ++j) {
          const float* kj = pk + (j * H + h) * D;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
          scores[j] = dot * scale;
          max_score = std::max(max_score, scores[j]);
        }
        float denom = 0.0f;
        for (int64_t j = 0; j < Sk; ++j) {
          scores[j] = std::exp(scores[j] - max_score);
          denom += scores[j];
        }
        float* oi = po + (i * H + h) * D;
        for (int64_t j = 0; j < Sk; ++j) {
          const float p = scores[j] / denom;
          const float* vj = pv + (j * H + h) * D;
          for (int64_t d = 0; d < D; ++d) oi[d] += p * vj[d];
        }
      }
    }
  }
  return out;
}

}  // namespace orochi::cpu
