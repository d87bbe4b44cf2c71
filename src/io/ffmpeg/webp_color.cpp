#include "io/ffmpeg/webp_color.h"

#include <cstdint>

namespace orochi::io::av {
namespace {

// libwebp's dsp/yuv.h: 16-bit "mulhi" products, 6 fraction bits, clip.
constexpr int kFix2 = 6;
constexpr int kMask2 = (256 << kFix2) - 1;
inline int mult_hi(int v, int coeff) { return (v * coeff) >> 8; }
inline uint8_t clip8(int v) {
  return static_cast<uint8_t>(((v & ~kMask2) == 0) ? (v >> kFix2) : (v < 0) ? 0 : 255);
}
inline void yuv_to_rgb(int y, int u, int v, uint8_t* rgb) {
  rgb[0] = clip8(mult_hi(y, 19077) + mult_hi(v, 26149) - 14234);
  rgb[1] = clip8(mult_hi(y, 19077) - mult_hi(u, 6419) - mult_hi(v, 13320) + 8708);
  rgb[2] = clip8(mult_hi(y, 19077) + mult_hi(u, 33050) - 17685);
}

// One output row of libwebp's UpsampleRgbLinePair. `near` is the chroma row nearer to this luma row,
// `far` the other; u and v travel packed in one word as libwebp's LOAD_UV does, so the carries match.
void upsample_row(const uint8_t* y, const uint8_t* near_u, const uint8_t* near_v, const uint8_t* far_u,
                  const uint8_t* far_v, int len, uint8_t* dst) {
  auto load = [](const uint8_t* u, const uint8_t* v, int x) { return uint32_t(u[x]) | (uint32_t(v[x]) << 16); };
  auto emit = [&](int x, uint32_t uv) { yuv_to_rgb(y[x], uv & 0xff, uv >> 16, dst + 3 * x); };
  const int last_pair = (len - 1) >> 1;
  uint32_t far_l = load(far_u, far_v, 0), near_l = load(near_u, near_v, 0);
  emit(0, (3 * near_l + far_l + 0x00020002u) >> 2);
  for (int x = 1; x <= last_pair; ++x) {
    const uint32_t far_c = load(far_u, far_v, x), near_c = load(near_u, near_v, x);
    const uint32_t avg = far_l + far_c + near_l + near_c + 0x00080008u;
    // diag_a pairs (far current, near left); diag_b pairs (far left, near current).
    const uint32_t diag_a = (avg + 2 * (far_c + near_l)) >> 3;
    const uint32_t diag_b = (avg + 2 * (far_l + near_c)) >> 3;
    emit(2 * x - 1, (diag_b + near_l) >> 1);
    emit(2 * x, (diag_a + near_c) >> 1);
    far_l = far_c;
    near_l = near_c;
  }
  if (!(len & 1)) emit(len - 1, (3 * near_l + far_l + 0x00020002u) >> 2);
}

}  // namespace

bool is_webp_yuv420_layout(AVPixelFormat f) { return f == AV_PIX_FMT_YUV420P || f == AV_PIX_FMT_YUVA420P; }

RgbImage webp_yuv420_to_rgb(const AVFrame* f) {
  const int W = f->width, H = f->height;
  const int ch = (H + 1) / 2;
  RgbImage img;
  img.height = H;
  img.width = W;
  img.rgb.resize(static_cast<size_t>(H) * W * 3);
  for (int r = 0; r < H; ++r) {
    // Luma row 0 pairs chroma row 0 with itself; rows 2k-1 and 2k sit between chroma rows k-1 and k,
    // nearer to k-1 and to k respectively; a last odd row repeats the last chroma row.
    int near_row, far_row;
    if (r == 0) {
      near_row = far_row = 0;
    } else if (r & 1) {
      near_row = (r - 1) / 2;
      far_row = near_row + 1 < ch ? near_row + 1 : near_row;
    } else {
      near_row = r / 2;
      far_row = near_row - 1;
    }
    const uint8_t* nu = f->data[1] + near_row * f->linesize[1];
    const uint8_t* nv = f->data[2] + near_row * f->linesize[2];
    const uint8_t* fu = f->data[1] + far_row * f->linesize[1];
    const uint8_t* fv = f->data[2] + far_row * f->linesize[2];
    upsample_row(f->data[0] + r * f->linesize[0], nu, nv, fu, fv, W, img.rgb.data() + static_cast<size_t>(r) * W * 3);
  }
  return img;
}

}  // namespace orochi::io::av
