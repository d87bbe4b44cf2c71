#include "support/compare.h"

#include <cmath>
#include <sstream>
#include <vector>

namespace orochi::testing {

std::string Comparison::summary() const {
  std::ostringstream os;
  os << "rel_l2=" << rel_l2 << " max_abs=" << max_abs << " cosine=" << cosine
     << " same_nonfinite=" << (same_nonfinite ? "yes" : "no");
  return os.str();
}

Comparison compare(const Tensor& actual, const Tensor& expected) {
  OROCHI_CHECK(actual.shape() == expected.shape(), actual.describe(), " vs ", expected.describe());
  const Tensor a = actual.to(DType::kF32), b = expected.to(DType::kF32);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  Comparison c;
  double diff2 = 0, norm_a = 0, norm_b = 0, dot = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const bool fa = std::isfinite(pa[i]), fb = std::isfinite(pb[i]);
    if (!fa || !fb) {
      const bool same = (std::isnan(pa[i]) && std::isnan(pb[i])) || pa[i] == pb[i];
      if (!same) c.same_nonfinite = false;
      continue;
    }
    const double d = static_cast<double>(pa[i]) - pb[i];
    diff2 += d * d;
    norm_a += static_cast<double>(pa[i]) * pa[i];
    norm_b += static_cast<double>(pb[i]) * pb[i];
    dot += static_cast<double>(pa[i]) * pb[i];
    c.max_abs = std::max(c.max_abs, std::fabs(d));
  }
  c.rel_l2 = std::sqrt(diff2) / std::max(std::sqrt(norm_b), 1e-30);
  c.cosine = (norm_a > 0 && norm_b > 0) ? dot / std::sqrt(norm_a * norm_b) : (norm_a == norm_b ? 1 : 0);
  return c;
}

}  // namespace orochi::testing
