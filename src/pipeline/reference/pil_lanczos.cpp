#include "pipeline/reference/pil_lanczos.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace orochi::pipeline::reference {
namespace {

// Pillow keeps 22 fraction bits: 8 bits of pixel and 2 bits of headroom for the filter's overshoot
// inside a signed 32-bit sum.
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr double kLanczosSupport = 3.0;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) {
  if (-3.0 <= x && x < 3.0) return sinc(x) * sinc(x / 3);
  return 0.0;
}

// One axis's filter: for output i, `count[i]` taps starting at input `first[i]`, with fixed-point
// weights weights[i * ksize + k].
struct AxisFilter {
  int64_t ksize = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> weights;
};

// Pillow's precompute_coeffs + normalize_coeffs_8bpc, with the same expressions in the same order (the
// double rounding of each step decides which way a weight's last bit goes).
AxisFilter axis_filter(int64_t in_size, int64_t out_size) {
  // The box is (0, in_size) as floats; in1 - in0 is taken in float, then widened.
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / static_cast<double>(out_size);
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = kLanczosSupport * filterscale;
  AxisFilter f;
  f.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  f.first.resize(out_size);
  f.count.resize(out_size);
  f.weights.assign(out_size * f.ksize, 0);
  std::vector<double> k(f.ksize);
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int64_t xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int64_t xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      const double w = lanczos((static_cast<int>(x + xmin) - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    for (int64_t x = 0; x < xmax; ++x)
      if (ww != 0.0) k[x] /= ww;
    for (int64_t x = 0; x < xmax; ++x) {
      // Round half away from zero, as (int)(±0.5 + v) does.
      const double v = k[x] * (1 << kPrecisionBits);
      f.weights[xx * f.ksize + x] = k[x] < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v);
    }
    f.first[xx] = xmin;
    f.count[xx] = xmax;
  }
  return f;
}

// Pillow's clip8: the sum shifted down (arithmetic shift, so negatives floor) and clamped.
inline uint8_t clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Rows [row0, row0 + rows) of `in` ([*, in_w, 3]) resampled along x into `out` ([rows, out_w, 3]).
void horizontal_pass(const uint8_t* in, int64_t in_w, int64_t row0, int64_t rows, const AxisFilter& f,
                     uint8_t* out, int64_t out_w, bool threads) {
#pragma omp parallel for schedule(static) if (threads)
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* src = in + (row0 + y) * in_w * 3;
    uint8_t* dst = out + y * out_w * 3;
    for (int64_t xx = 0; xx < out_w; ++xx) {
      const int32_t* k = f.weights.data() + xx * f.ksize;
      const uint8_t* p = src + f.first[xx] * 3;
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int64_t x = 0; x < f.count[xx]; ++x) {
        s0 += p[x * 3 + 0] * k[x];
        s1 += p[x * 3 + 1] * k[x];
        s2 += p[x * 3 + 2] * k[x];
      }
      dst[xx * 3 + 0] = clip8(s0);
      dst[xx * 3 + 1] = clip8(s1);
      dst[xx * 3 + 2] = clip8(s2);
    }
  }
}

// `in` ([*, w, 3]) resampled along y into `out` ([out_h, w, 3]); f.first indexes rows of `in`. Each
// output row sums whole source rows (cache-friendly); integer sums do not depend on the order, so the
// bytes equal Pillow's per-pixel loop.
void vertical_pass(const uint8_t* in, int64_t w, const AxisFilter& f, uint8_t* out, int64_t out_h, bool threads) {
  const int64_t row_bytes = w * 3;
#pragma omp parallel if (threads)
  {
    std::vector<int32_t> acc(static_cast<size_t>(row_bytes));
#pragma omp for schedule(static)
    for (int64_t yy = 0; yy < out_h; ++yy) {
      const int32_t* k = f.weights.data() + yy * f.ksize;
      const uint8_t* src = in + f.first[yy] * row_bytes;
      std::fill(acc.begin(), acc.end(), int32_t{1} << (kPrecisionBits - 1));
      for (int64_t y = 0; y < f.count[yy]; ++y) {
        const uint8_t* s = src + y * row_bytes;
        const int32_t ky = k[y];
        for (int64_t i = 0; i < row_bytes; ++i) acc[i] += s[i] * ky;
      }
      uint8_t* dst = out + yy * row_bytes;
      for (int64_t i = 0; i < row_bytes; ++i) dst[i] = clip8(acc[i]);
    }
  }
}

// One size to another: the filters, made once for every frame of a video. `threads`: the passes
// split their rows over OpenMP's threads (one picture); off when the frames are the split.
struct ResizePlan {
  int64_t in_height = 0, in_width = 0, out_height = 0, out_width = 0;
  bool horizontal = false, vertical = false;
  AxisFilter horizontal_filter, vertical_filter;  // vertical_filter.first relative to first_row
  int64_t first_row = 0, rows = 0;                // the source rows the vertical pass reads

  ResizePlan(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w)
      : in_height(in_h), in_width(in_w), out_height(out_h), out_width(out_w), horizontal(out_w != in_w),
        vertical(out_h != in_h) {
    if (!horizontal && !vertical) return;
    vertical_filter = axis_filter(in_height, out_height);
    // The horizontal pass only computes the source rows the vertical pass reads.
    first_row = vertical_filter.first.front();
    rows = vertical_filter.first.back() + vertical_filter.count.back() - first_row;
    if (!horizontal) return;
    horizontal_filter = axis_filter(in_width, out_width);
    if (vertical)
      for (int64_t& row : vertical_filter.first) row -= first_row;
  }

  // `temp` holds the horizontal pass's rows between the passes ([rows, W', 3]).
  void run(const uint8_t* in, uint8_t* out, std::vector<uint8_t>& temp, bool threads) const {
    if (!horizontal && !vertical) {
      std::memcpy(out, in, static_cast<size_t>(in_height * in_width * 3));
    } else if (!horizontal) {
      vertical_pass(in, in_width, vertical_filter, out, out_height, threads);
    } else if (!vertical) {
      horizontal_pass(in, in_width, 0, in_height, horizontal_filter, out, out_width, threads);
    } else {
      temp.resize(static_cast<size_t>(rows * out_width * 3));
      horizontal_pass(in, in_width, first_row, rows, horizontal_filter, temp.data(), out_width, threads);
      vertical_pass(temp.data(), out_width, vertical_filter, out, out_height, threads);
    }
  }
};

}  // namespace

void pil_lanczos_resize_rgb(const uint8_t* in, int64_t in_height, int64_t in_width, uint8_t* out,
                            int64_t out_height, int64_t out_width) {
  std::vector<uint8_t> temp;
  ResizePlan(in_height, in_width, out_height, out_width).run(in, out, temp, /*threads=*/true);
}

void pil_lanczos_resize_frames(const std::vector<const uint8_t*>& in, int64_t in_height, int64_t in_width,
                               const std::vector<uint8_t*>& out, int64_t out_height, int64_t out_width) {
  const ResizePlan plan(in_height, in_width, out_height, out_width);
  const int64_t n = static_cast<int64_t>(std::min(in.size(), out.size()));
#pragma omp parallel
  {
    std::vector<uint8_t> temp;
#pragma omp for schedule(dynamic)
    for (int64_t f = 0; f < n; ++f) plan.run(in[f], out[f], temp, /*threads=*/false);
  }
}

Expected<io::RgbImage> pil_lanczos_resize(const io::RgbImage& in, int64_t out_width, int64_t out_height) {
  if (in.height <= 0 || in.width <= 0 || static_cast<int64_t>(in.rgb.size()) != in.height * in.width * 3)
    return invalid_argument("cannot resize an empty or inconsistent image (" + std::to_string(in.width) + "x" +
                            std::to_string(in.height) + ", " + std::to_string(in.rgb.size()) + " bytes)");
  if (out_width <= 0 || out_height <= 0 || out_width > io::kMaxImagePixels / out_height)
    return invalid_argument("cannot resize to " + std::to_string(out_width) + "x" + std::to_string(out_height) +
                            ": the size must be positive and at most " + std::to_string(io::kMaxImagePixels) +
                            " pixels");
  io::RgbImage out;
  out.height = out_height;
  out.width = out_width;
  out.rgb.resize(static_cast<size_t>(out_height * out_width * 3));
  pil_lanczos_resize_rgb(in.rgb.data(), in.height, in.width, out.rgb.data(), out_height, out_width);
  return out;
}

Expected<io::RgbImage> crop(const io::RgbImage& in, int64_t left, int64_t top, int64_t width, int64_t height) {
  if (left < 0 || top < 0 || width <= 0 || height <= 0 || left + width > in.width || top + height > in.height)
    return invalid_argument("crop (" + std::to_string(left) + ", " + std::to_string(top) + ", " +
                            std::to_string(width) + "x" + std::to_string(height) + ") is outside the " +
                            std::to_string(in.width) + "x" + std::to_string(in.height) + " image");
  io::RgbImage out;
  out.height = height;
  out.width = width;
  out.rgb.resize(static_cast<size_t>(height * width * 3));
  for (int64_t y = 0; y < height; ++y)
    std::memcpy(out.rgb.data() + y * width * 3, in.pixel(top + y, left), static_cast<size_t>(width * 3));
  return out;
}

}  // namespace orochi::pipeline::reference
