// Index ranges shared by the 1-D convolution loops: which output positions of a strided access
// stay inside the input, so the inner loops carry no bounds test (and vectorize).
#pragma once

#include <algorithm>
#include <cstdint>

namespace orochi::cpu::detail {

struct Range {
  int64_t begin = 0, end = 0;  // [begin, end); empty when end <= begin
};

// floor(a / b) for b > 0 and any sign of a.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The t in [0, count) with 0 <= t·stride + offset < length.
inline Range strided_reads_in_bounds(int64_t offset, int64_t stride, int64_t length, int64_t count) {
  Range r;
  r.begin = std::max<int64_t>(0, -floor_div(offset, stride));  // ceil(-offset / stride)
  r.end = std::min<int64_t>(count, floor_div(length - 1 - offset, stride) + 1);
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

}  // namespace orochi::cpu::detail
