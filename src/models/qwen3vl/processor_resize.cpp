#include "models/qwen3vl/processor_resize.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace orochi::qwen3vl {
namespace {

// Keys' cubic convolution kernel with a = -0.5 (the antialiased filter), in the operation order
// PyTorch's cubic_convolution1/2 use: the int16 weights round from these doubles.
double keys_cubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

uint8_t clamp_shift(int64_t sum, unsigned precision) {
  // Arithmetic shift (floor), then saturation to uint8, as the SIMD kernels' srai + packus do.
  const int64_t v = sum >> precision;
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

}  // namespace

ResizeAxisPlan bicubic_antialias_plan(int64_t in_size, int64_t out_size) {
  OROCHI_CHECK(in_size > 0 && out_size > 0, "resize sizes ", in_size, " -> ", out_size);
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;  // interp_size 4 · 0.5 (· scale)
  const int64_t taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;

  ResizeAxisPlan plan;
  plan.taps = taps;
  plan.first.resize(static_cast<size_t>(out_size));
  plan.count.resize(static_cast<size_t>(out_size));
  std::vector<double> w(static_cast<size_t>(out_size * taps), 0.0);
  double w_max = 0.0;
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t xsize =
        std::clamp<int64_t>(std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size) - xmin, 0, taps);
    double* wi = w.data() + i * taps;
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      wi[j] = keys_cubic((static_cast<double>(j + xmin) - center + 0.5) * invscale);
      total += wi[j];
    }
    if (total != 0.0)
      for (int64_t j = 0; j < xsize; ++j) {
        wi[j] /= total;
        w_max = std::max(w_max, wi[j]);
      }
    plan.first[static_cast<size_t>(i)] = xmin;
    plan.count[static_cast<size_t>(i)] = xsize;
  }
  // The most fractional bits that keep round(w_max · 2^(p+1)) below 2^15, capped at 22.
  unsigned p = 0;
  for (; p < 22; ++p)
    if (static_cast<int>(0.5 + w_max * static_cast<double>(1 << (p + 1))) >= (1 << 15)) break;
  plan.precision = p;
  plan.weights.resize(w.size());
  for (size_t k = 0; k < w.size(); ++k) {
    const double v = w[k] * static_cast<double>(1 << p);
    plan.weights[k] = static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
  }
  return plan;
}

std::vector<uint8_t> resize_rgb_bicubic_antialias(const uint8_t* rgb, int64_t height, int64_t width, int64_t out_height,
                                                  int64_t out_width) {
  OROCHI_CHECK(height > 0 && width > 0 && out_height > 0 && out_width > 0, "resize ", height, "x", width, " -> ",
               out_height, "x", out_width);
  constexpr int64_t C = 3;
  std::vector<uint8_t> src(rgb, rgb + height * width * C);
  if (out_width != width) {  // horizontal pass: [H, W, 3] -> [H, out_W, 3]
    const ResizeAxisPlan plan = bicubic_antialias_plan(width, out_width);
    const int64_t one = int64_t{1} << (plan.precision - 1);
    std::vector<uint8_t> dst(static_cast<size_t>(height * out_width * C));
#pragma omp parallel for schedule(static) if (height * out_width > 65536)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < out_width; ++x) {
        const int16_t* k = plan.weights.data() + x * plan.taps;
        const uint8_t* in = src.data() + (y * width + plan.first[x]) * C;
        for (int64_t c = 0; c < C; ++c) {
          int64_t sum = one;
          for (int64_t j = 0; j < plan.count[x]; ++j) sum += static_cast<int64_t>(in[j * C + c]) * k[j];
          dst[(y * out_width + x) * C + c] = clamp_shift(sum, plan.precision);
        }
      }
    src.swap(dst);
    width = out_width;
  }
  if (out_height != height) {  // vertical pass: [H, W, 3] -> [out_H, W, 3]
    const ResizeAxisPlan plan = bicubic_antialias_plan(height, out_height);
    const int64_t one = int64_t{1} << (plan.precision - 1);
    const int64_t row = width * C;
    std::vector<uint8_t> dst(static_cast<size_t>(out_height * row));
#pragma omp parallel for schedule(static) if (out_height * row > 65536)
    for (int64_t y = 0; y < out_height; ++y) {
      const int16_t* k = plan.weights.data() + y * plan.taps;
      const uint8_t* in = src.data() + plan.first[y] * row;
      for (int64_t i = 0; i < row; ++i) {
        int64_t sum = one;
        for (int64_t j = 0; j < plan.count[y]; ++j) sum += static_cast<int64_t>(in[j * row + i]) * k[j];
        dst[y * row + i] = clamp_shift(sum, plan.precision);
      }
    }
    src.swap(dst);
  }
  return src;
}

}  // namespace orochi::qwen3vl
