// Tensor comparison for tests: relative L2 error, cosine, and NaN/Inf positions, as the numerics
// contract asks (not just allclose).
#pragma once

#include <string>

#include "core/tensor.h"

namespace orochi::testing {

struct Comparison {
  double rel_l2 = 0;       // ||a - b|| / max(||b||, tiny)
  double max_abs = 0;
  double cosine = 1;
  bool same_nonfinite = true;  // NaN and Inf at the same positions
  std::string summary() const;
};

// `actual` and `expected` must have the same shape (any float dtype; compared in fp64).
Comparison compare(const Tensor& actual, const Tensor& expected);

}  // namespace orochi::testing

// EXPECT_CLOSE(actual, expected, 1e-5): same shape, same NaN/Inf positions, rel L2 <= tol.
#define EXPECT_TENSOR_CLOSE(actual, expected, tol)                                      \
  do {                                                                                  \
    const auto& a_ = (actual);                                                          \
    const auto& e_ = (expected);                                                        \
    ASSERT_EQ(a_.shape(), e_.shape()) << a_.describe() << " vs " << e_.describe();      \
    const auto c_ = ::orochi::testing::compare(a_, e_);                                 \
    EXPECT_TRUE(c_.same_nonfinite && c_.rel_l2 <= (tol)) << c_.summary();               \
  } while (0)
