#include "io/yuv444_to_rgb.h"

namespace orochi::io {
namespace {

// Every product the expressions take, once: y[k] = 1.164...·(k - 16), and the chroma terms.
struct Bt601Tables {
  double y[256], r_cr[256], g_cb[256], g_cr[256], b_cb[256];
  Bt601Tables() {
    for (int k = 0; k < 256; ++k) {
      y[k] = 1.164383561643836 * (k - 16.0);
      r_cr[k] = 1.596026785714286 * (k - 128.0);
      g_cb[k] = 0.391762290094914 * (k - 128.0);
      g_cr[k] = 0.812967647237771 * (k - 128.0);
      b_cb[k] = 2.017232142857143 * (k - 128.0);
    }
  }
};
const Bt601Tables kTables;

// clamp(lround(v), 0, 255) without the library call: for 0 < v < 255, floor(v) is the truncation and
// v - floor(v) is exact, so a half rounds away from zero as lround does.
inline uint8_t round_to_byte(double v) {
  if (!(v > 0)) return 0;
  if (v >= 255) return 255;
  const int i = static_cast<int>(v);
  return static_cast<uint8_t>(i + (v - i >= 0.5 ? 1 : 0));
}

}  // namespace

void yuv444_to_rgb(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, int64_t pixels, uint8_t* rgb) {
  const Bt601Tables& t = kTables;
  for (int64_t p = 0; p < pixels; ++p) {
    const double Y = t.y[y[p]];
    rgb[p * 3] = round_to_byte(Y + t.r_cr[cr[p]]);
    rgb[p * 3 + 1] = round_to_byte(Y - t.g_cb[cb[p]] - t.g_cr[cr[p]]);
    rgb[p * 3 + 2] = round_to_byte(Y + t.b_cb[cb[p]]);
  }
}

}  // namespace orochi::io
