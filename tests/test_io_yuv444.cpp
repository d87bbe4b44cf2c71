// io::yuv444_to_rgb (the Y4M reader's colours) against the direct BT.601 expression it tables:
// every one of the 2^24 (Y, Cb, Cr) triples gives the same three bytes, so the tables and the exact
// rounding change nothing but the speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "io/yuv444_to_rgb.h"

namespace orochi::io {
namespace {

uint8_t clamp_byte(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

TEST(Yuv444ToRgb, EveryTripleEqualsTheDirectExpression) {
  std::vector<uint8_t> y(256 * 256), cb(256 * 256), cr(256 * 256), rgb(256 * 256 * 3);
  int64_t differ = 0;
  for (int Y = 0; Y < 256; ++Y) {  // one row of 65536 pixels per luma value: every Cb x Cr
    for (int i = 0; i < 256 * 256; ++i) {
      y[i] = static_cast<uint8_t>(Y);
      cb[i] = static_cast<uint8_t>(i / 256);
      cr[i] = static_cast<uint8_t>(i % 256);
    }
    yuv444_to_rgb(y.data(), cb.data(), cr.data(), 256 * 256, rgb.data());
    for (int i = 0; i < 256 * 256; ++i) {
      const double L = 1.164383561643836 * (Y - 16.0), U = cb[i] - 128.0, V = cr[i] - 128.0;
      differ += rgb[i * 3] != clamp_byte(L + 1.596026785714286 * V);
      differ += rgb[i * 3 + 1] != clamp_byte(L - 0.391762290094914 * U - 0.812967647237771 * V);
      differ += rgb[i * 3 + 2] != clamp_byte(L + 2.017232142857143 * U);
    }
  }
  EXPECT_EQ(differ, 0);
}

TEST(Yuv444ToRgb, LimitedRangeEndsAndGrey) {
  const uint8_t black[3] = {16, 128, 128}, white[3] = {235, 128, 128}, grey[3] = {126, 128, 128};
  for (const uint8_t* p : {black, white, grey}) {
    uint8_t rgb[3];
    yuv444_to_rgb(p, p + 1, p + 2, 1, rgb);
    const int expect = p == black ? 0 : p == white ? 255 : 128;  // 1.1644 * 110 = 128.08
    EXPECT_EQ(rgb[0], expect);
    EXPECT_EQ(rgb[1], expect);
    EXPECT_EQ(rgb[2], expect);
  }
}

}  // namespace
}  // namespace orochi::io
