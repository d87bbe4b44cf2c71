// Media decode on several threads (issue 23's preprocessing): a Y4M video read, a reference video
// normalized (frames resized on all threads) and a picture resized give the same bytes with 1, 2, 3
// and 4 OpenMP threads, and the frame-parallel resize equals the one-picture resize frame by frame.
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "io/raw_media_in.h"
#include "io/y4m_writer.h"
#include "pipeline/reference/pil_lanczos.h"
#include "pipeline/reference/reference_video.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

// Image-like frames (gradients and a moving edge), so the LANCZOS taps see structure.
io::VideoFrames pattern_video(int64_t frames, int64_t h, int64_t w, int num = 30) {
  io::VideoFrames v;
  v.frames = frames;
  v.height = h;
  v.width = w;
  v.fps = {num, 1};
  v.rgb.resize(static_cast<size_t>(frames * h * w * 3));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        uint8_t* p = v.frame(f) + (y * w + x) * 3;
        p[0] = static_cast<uint8_t>((x * 255) / w);
        p[1] = static_cast<uint8_t>(x > 3 * f + y / 2 ? 230 : 20);
        p[2] = static_cast<uint8_t>((x * 7 + y * 13 + f * 29) % 256);
      }
  return v;
}

// `body` once per thread count; every result equal to the first (one thread's).
template <typename F>
void same_for_thread_counts(F body) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<uint8_t> one = body();
  ASSERT_FALSE(one.empty());
  for (int threads : {2, 3, 4}) {
    omp_set_num_threads(threads);
    EXPECT_TRUE(body() == one) << threads << " threads";
  }
  omp_set_num_threads(saved);
}

TEST(MediaDecodeThreads, Y4mReadIsTheSameOnAnyThreadCount) {
  testing::TempDir dir("y4m_threads");
  ASSERT_TRUE(io::write_y4m(dir.file("v.y4m"), pattern_video(7, 37, 53)).is_ok());
  same_for_thread_counts([&] {
    Expected<io::DecodedVideo> v = io::read_y4m(dir.file("v.y4m"), io::VideoReadOptions{.max_frames = 6});
    EXPECT_TRUE(v.has_value()) << v.status().to_string();
    EXPECT_EQ(v->frames.frames, 6);
    return v->frames.rgb;
  });
}

TEST(MediaDecodeThreads, ReferenceVideoIsTheSameOnAnyThreadCount) {
  // 30 fps onto 24 (frames dropped) and 20 fps (frames repeated), up- and downscaled canvases.
  for (int fps : {30, 20}) {
    const io::VideoFrames video = pattern_video(23, 72, 120, fps);
    for (pipeline::reference::Size canvas : {pipeline::reference::Size{160, 96}, pipeline::reference::Size{64, 32}})
      same_for_thread_counts([&] {
        Expected<io::VideoFrames> out = pipeline::reference::normalize_reference_video(video, fps, 22, {}, canvas);
        EXPECT_TRUE(out.has_value()) << out.status().to_string();
        return out->rgb;
      });
  }
}

TEST(MediaDecodeThreads, FramesResizeAsOnePictureEach) {
  const io::VideoFrames video = pattern_video(5, 45, 80);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{96, 160}, {45, 33}, {20, 80}, {45, 80}}) {
    std::vector<uint8_t> together(static_cast<size_t>(5 * h * w * 3)), alone(together.size());
    std::vector<const uint8_t*> in;
    std::vector<uint8_t*> out;
    for (int64_t f = 0; f < 5; ++f) {
      in.push_back(video.frame(4 - f));  // any order of sources
      out.push_back(together.data() + f * h * w * 3);
      pipeline::reference::pil_lanczos_resize_rgb(video.frame(4 - f), 45, 80, alone.data() + f * h * w * 3, h, w);
    }
    pipeline::reference::pil_lanczos_resize_frames(in, 45, 80, out, h, w);
    EXPECT_TRUE(together == alone) << w << "x" << h;
  }
}

TEST(MediaDecodeThreads, PictureResizeIsTheSameOnAnyThreadCount) {
  const io::VideoFrames picture = pattern_video(1, 301, 173);
  same_for_thread_counts([&] {
    std::vector<uint8_t> out(static_cast<size_t>(640 * 352 * 3));
    pipeline::reference::pil_lanczos_resize_rgb(picture.frame(0), 301, 173, out.data(), 640, 352);
    return out;
  });
}

}  // namespace
}  // namespace orochi
