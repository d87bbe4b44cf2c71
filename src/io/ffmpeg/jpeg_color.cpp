#include "io/ffmpeg/jpeg_color.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace orochi::io::av {
namespace {

constexpr int kScaleBits = 16;
constexpr int64_t kOneHalf = int64_t{1} << (kScaleBits - 1);
constexpr int64_t fix(double x) { return static_cast<int64_t>(x * (int64_t{1} << kScaleBits) + 0.5); }

// libjpeg's build_ycc_rgb_table.
struct YccTables {
  std::array<int, 256> cr_r, cb_b;
  std::array<int64_t, 256> cr_g, cb_g;
  YccTables() {
    for (int i = 0; i < 256; ++i) {
      const int64_t x = i - 128;
      cr_r[i] = static_cast<int>((fix(1.40200) * x + kOneHalf) >> kScaleBits);
      cb_b[i] = static_cast<int>((fix(1.77200) * x + kOneHalf) >> kScaleBits);
      cr_g[i] = -fix(0.71414) * x;
      cb_g[i] = -fix(0.34414) * x + kOneHalf;  // the rounding half rides on the Cb term
    }
  }
};

inline uint8_t clamp255(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// libjpeg's h2v1 fancy upsampling of one row: `in` has n samples, `out` gets 2n.
void upsample_row_h2(const int* in, int n, int* out) {
  if (n == 1) {
    out[0] = out[1] = in[0];
    return;
  }
  out[0] = in[0];
  out[1] = (in[0] * 3 + in[1] + 2) >> 2;
  for (int i = 1; i < n - 1; ++i) {
    const int v = in[i] * 3;
    out[2 * i] = (v + in[i - 1] + 1) >> 2;
    out[2 * i + 1] = (v + in[i + 1] + 2) >> 2;
  }
  out[2 * n - 2] = (in[n - 1] * 3 + in[n - 2] + 1) >> 2;
  out[2 * n - 1] = in[n - 1];
}

// libjpeg's h2v2 fancy upsampling: column sums 3 * nearer row + farther row, then the horizontal
// triangle with biases 8 and 7 (16ths).
void upsample_row_h2v2(const int* colsum, int n, int* out) {
  if (n == 1) {
    out[0] = (colsum[0] * 4 + 8) >> 4;
    out[1] = (colsum[0] * 4 + 7) >> 4;
    return;
  }
  out[0] = (colsum[0] * 4 + 8) >> 4;
  out[1] = (colsum[0] * 3 + colsum[1] + 7) >> 4;
  for (int i = 1; i < n - 1; ++i) {
    out[2 * i] = (colsum[i] * 3 + colsum[i - 1] + 8) >> 4;
    out[2 * i + 1] = (colsum[i] * 3 + colsum[i + 1] + 7) >> 4;
  }
  out[2 * n - 2] = (colsum[n - 1] * 3 + colsum[n - 2] + 8) >> 4;
  out[2 * n - 1] = (colsum[n - 1] * 4 + 7) >> 4;
}

}  // namespace

bool is_jpeg_ycc_layout(AVPixelFormat f) {
  return f == AV_PIX_FMT_YUVJ444P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ420P ||
         f == AV_PIX_FMT_YUV444P || f == AV_PIX_FMT_YUV422P || f == AV_PIX_FMT_YUV420P;
}

RgbImage jpeg_ycc_to_rgb(const AVFrame* f) {
  static const YccTables tables;
  const auto format = static_cast<AVPixelFormat>(f->format);
  const bool h2 = format != AV_PIX_FMT_YUVJ444P && format != AV_PIX_FMT_YUV444P;
  const bool v2 = format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUV420P;
  const int W = f->width, H = f->height;
  const int cw = h2 ? (W + 1) / 2 : W, ch = v2 ? (H + 1) / 2 : H;
  RgbImage img;
  img.height = H;
  img.width = W;
  img.rgb.resize(static_cast<size_t>(H) * W * 3);
  std::vector<int> row_in(cw), colsum(cw), cb(2 * cw), cr(2 * cw);
  auto chroma_row = [&](int plane, int r, std::vector<int>& out) {
    const uint8_t* p = f->data[plane];
    const int ls = f->linesize[plane];
    if (v2) {
      // The other row of the triangle: above for even output rows, below for odd ones, the edge
      // rows repeated (libjpeg's context rows).
      const int c = r >> 1;
      const int other = (r & 1) ? std::min(c + 1, ch - 1) : std::max(c - 1, 0);
      for (int x = 0; x < cw; ++x) colsum[x] = p[c * ls + x] * 3 + p[other * ls + x];
      upsample_row_h2v2(colsum.data(), cw, out.data());
    } else {
      for (int x = 0; x < cw; ++x) row_in[x] = p[r * ls + x];
      if (h2) upsample_row_h2(row_in.data(), cw, out.data());
      else std::copy(row_in.begin(), row_in.end(), out.begin());
    }
  };
  for (int y = 0; y < H; ++y) {
    chroma_row(1, y, cb);
    chroma_row(2, y, cr);
    const uint8_t* luma = f->data[0] + y * f->linesize[0];
    uint8_t* dst = img.rgb.data() + static_cast<size_t>(y) * W * 3;
    for (int x = 0; x < W; ++x) {
      const int Y = luma[x], b = cb[x], r = cr[x];
      dst[3 * x + 0] = clamp255(Y + tables.cr_r[r]);
      dst[3 * x + 1] = clamp255(Y + static_cast<int>((tables.cb_g[b] + tables.cr_g[r]) >> kScaleBits));
      dst[3 * x + 2] = clamp255(Y + tables.cb_b[b]);
    }
  }
  return img;
}

}  // namespace orochi::io::av
