// Reference-media preprocessing against diffusers' MiniMax-H3 pipeline, Pillow and torchaudio
// (tests/data/reference_media, made by scripts/golden/make_reference_media.py): Pillow's LANCZOS bit
// for bit, D's 2048-short-edge and fl2va resizes, the canvas and frame-count rules, the 24 fps frame
// slots, and torchaudio's resampler within 1e-6; plus every bad argument's message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/reference/pil_lanczos.h"
#include "pipeline/reference/reference_audio.h"
#include "pipeline/reference/reference_geometry.h"
#include "pipeline/reference/reference_image.h"
#include "pipeline/reference/reference_video.h"
#include "pipeline/reference/sinc_resample.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

using namespace pipeline::reference;

weights::Checkpoint open_golden(const std::string& name) {
  Expected<weights::Checkpoint> g =
      weights::Checkpoint::open(testing::test_data_dir() + "/reference_media/" + name + ".safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

Tensor get(const weights::Checkpoint& g, const std::string& name) {
  Expected<Tensor> t = g.get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return t->contiguous();
}

bool has(const weights::Checkpoint& g, const std::string& name) {
  for (const std::string& n : g.names())
    if (n == name) return true;
  return false;
}

io::RgbImage image_of(const Tensor& t) {  // u8 [H, W, 3]
  io::RgbImage img;
  img.height = t.dim(0);
  img.width = t.dim(1);
  img.rgb.assign(t.data<uint8_t>(), t.data<uint8_t>() + t.numel());
  return img;
}

uint64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

uint64_t golden_hash(const weights::Checkpoint& g, const std::string& name) {
  return static_cast<uint64_t>(get(g, name).data<int64_t>()[0]);
}

// How many bytes differ, and the largest difference.
struct ByteDiff {
  int64_t count = 0;
  int max = 0;
};
ByteDiff diff(const std::vector<uint8_t>& a, const Tensor& b) {
  ByteDiff d;
  if (static_cast<int64_t>(a.size()) != b.numel()) return {-1, 256};
  for (int64_t i = 0; i < b.numel(); ++i) {
    const int e = std::abs(int(a[i]) - int(b.data<uint8_t>()[i]));
    d.count += e != 0;
    d.max = std::max(d.max, e);
  }
  return d;
}

TEST(PilLanczos, BitExactWithPillowOnEveryGoldenImageAndSize) {
  const weights::Checkpoint g = open_golden("images");
  int checked = 0;
  for (const std::string& name : g.names()) {
    const size_t at = name.find(".lanczos.");
    if (at == std::string::npos) continue;
    const std::string image = name.substr(4, at - 4);  // "img.<image>.lanczos.WxH"
    const std::string size = name.substr(at + 9);
    const int64_t w = std::stoll(size.substr(0, size.find('x'))), h = std::stoll(size.substr(size.find('x') + 1));
    const io::RgbImage src = image_of(get(g, "img." + image + ".rgb"));
    Expected<io::RgbImage> out = pil_lanczos_resize(src, w, h);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    const Tensor expected = get(g, name);
    ASSERT_EQ(out->height, expected.dim(0)) << name;
    ASSERT_EQ(out->width, expected.dim(1)) << name;
    const ByteDiff d = diff(out->rgb, expected);
    EXPECT_EQ(d.count, 0) << name << ": " << d.count << " bytes differ, by up to " << d.max;
    ++checked;
  }
  // Odd sizes, up and down (each axis alone too), gray, gray+alpha, RGBA, palette, 16-bit gray, WebP, EXIF JPEG.
  EXPECT_GE(checked, 16);
}

TEST(PilLanczos, UnchangedSizeIsACopy) {  // one-axis resizes are among the goldens (67x90, 131x45)
  io::RgbImage img;
  img.height = 5, img.width = 7;
  for (int i = 0; i < 5 * 7 * 3; ++i) img.rgb.push_back(static_cast<uint8_t>(i * 37));
  Expected<io::RgbImage> same = pil_lanczos_resize(img, 7, 5);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->rgb, img.rgb);
}

TEST(PilLanczos, RefusesEmptyInputsAndAbsurdSizes) {
  io::RgbImage empty;
  Expected<io::RgbImage> r = pil_lanczos_resize(empty, 4, 4);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("empty"), std::string::npos) << r.status().message();
  io::RgbImage one;
  one.height = one.width = 1;
  one.rgb = {1, 2, 3};
  for (auto [w, h] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, -1}, {100000, 100000}}) {
    r = pil_lanczos_resize(one, w, h);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("pixels"), std::string::npos) << r.status().message();
  }
  Expected<io::RgbImage> c = crop(one, 0, 0, 2, 1);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.status().message().find("outside"), std::string::npos) << c.status().message();
}

// D's setup step on real images: the 2048-short-edge size and Pillow's LANCZOS to it, whole-image hash.
TEST(ReferenceImage, ShortEdge2048MatchesDiffusersSetupStep) {
  const weights::Checkpoint g = open_golden("images");
  for (const std::string image : {"rgb_odd", "gray", "rgba", "exif_jpeg"}) {
    const io::RgbImage src = image_of(get(g, "img." + image + ".rgb"));
    Expected<io::RgbImage> out = normalize_reference_image(src);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    const Tensor expected_size = get(g, "ref2va." + image + ".size");
    EXPECT_EQ(out->width, expected_size.data<int64_t>()[0]) << image;
    EXPECT_EQ(out->height, expected_size.data<int64_t>()[1]) << image;
    EXPECT_EQ(fnv1a64(out->rgb.data(), out->rgb.size()), golden_hash(g, "ref2va." + image + ".fnv")) << image;
  }
}

// D's fl2va resize step: the first keyframe stretched, the second cover-cropped.
TEST(Fl2vaKeyframes, StretchAndCoverCropMatchDiffusersResizeStep) {
  const weights::Checkpoint g = open_golden("images");
  const io::RgbImage first = image_of(get(g, "img.rgb_odd.rgb"));
  const io::RgbImage last = image_of(get(g, "img.rgba.rgb"));
  for (auto [tag, canvas] : std::vector<std::pair<std::string, Size>>{{"small", {96, 64}}, {"tall", {64, 160}}}) {
    Expected<Keyframes> k = prepare_keyframes({first, last}, canvas);
    ASSERT_TRUE(k.has_value()) << k.status().to_string();
    EXPECT_EQ(diff(k->images[0].rgb, get(g, "fl2va." + tag + ".first")).count, 0) << tag;
    EXPECT_EQ(diff(k->images[1].rgb, get(g, "fl2va." + tag + ".last")).count, 0) << tag;
  }
  // No canvas given: the first keyframe's aspect resolves it.
  Expected<Keyframes> k = prepare_keyframes({first, last});
  ASSERT_TRUE(k.has_value()) << k.status().to_string();
  const Tensor size = get(g, "fl2va.auto.size");
  EXPECT_EQ(k->canvas, (Size{size.data<int64_t>()[0], size.data<int64_t>()[1]}));
  EXPECT_EQ(fnv1a64(k->images[0].rgb.data(), k->images[0].rgb.size()), golden_hash(g, "fl2va.auto.first_fnv"));
  EXPECT_EQ(fnv1a64(k->images[1].rgb.data(), k->images[1].rgb.size()), golden_hash(g, "fl2va.auto.last_fnv"));
  // A keyframe already on the canvas is kept as it is; bad requests say what is wrong.
  Expected<Keyframes> same = prepare_keyframes({k->images[0]}, k->canvas);
  EXPECT_EQ(same->images[0].rgb, k->images[0].rgb);
  EXPECT_NE(prepare_keyframes({}).status().message().find("one or two keyframes"), std::string::npos);
  EXPECT_NE(prepare_keyframes({first}, Size{100, 64}).status().message().find("multiple of 32"), std::string::npos);
}

TEST(ReferenceGeometry, CanvasShortEdgeMatchAndCoverCropEqualTheReference) {
  const weights::Checkpoint g = open_golden("geometry");
  const Tensor rows = get(g, "geometry.sizes");  // [n, 12]
  ASSERT_GE(rows.dim(0), 20);
  for (int64_t i = 0; i < rows.dim(0); ++i) {
    const int64_t* r = rows.data<int64_t>() + i * 12;
    const std::string at = std::to_string(r[0]) + "x" + std::to_string(r[1]);
    EXPECT_EQ(*resolve_canvas_size(double(r[0]), double(r[1])), (Size{r[2], r[3]})) << at;
    EXPECT_EQ(*reference_image_size(r[0], r[1]), (Size{r[4], r[5]})) << at;
    EXPECT_EQ(*reference_image_size(r[0], r[1], ImageSizePolicy::kMatch, {1344, 768}), (Size{r[6], r[7]})) << at;
    const CoverCrop cc = *cover_crop(r[0], r[1], {1344, 768});
    EXPECT_EQ(cc.resized, (Size{r[8], r[9]})) << at;
    EXPECT_EQ(cc.left, r[10]) << at;
    EXPECT_EQ(cc.top, r[11]) << at;
  }
  const Tensor align = get(g, "geometry.align");  // [n, 2]
  for (int64_t i = 0; i < align.dim(0); ++i)
    EXPECT_EQ(*align_num_frames(align.data<int64_t>()[2 * i]), align.data<int64_t>()[2 * i + 1]);
  // REF2VA.md's examples.
  EXPECT_EQ(*reference_image_size(1920, 1080), (Size{3648, 2048}));
  EXPECT_EQ(*reference_image_size(1000, 1500), (Size{2048, 3072}));
  EXPECT_EQ(*resolve_canvas_size(16, 9), (Size{1344, 768}));
  EXPECT_EQ(*resolve_canvas_size(832, 480), (Size{1344, 768}));
  EXPECT_EQ(reference_video_vae_frames(124), 124);
  EXPECT_EQ(reference_video_vae_frames(120), 107);
  EXPECT_EQ(reference_video_vae_frames(10), 22);  // fewer than 22: the encoder pads with the last frame
  EXPECT_EQ(video_latent_frames(124), 37);
  EXPECT_EQ(video_latent_frames(107), 32);
  EXPECT_EQ(video_latent_frames(1), 1);
}

TEST(ReferenceGeometry, BadSizesSayWhatIsWrong) {
  auto message = [](const Status& s) { return s.message(); };
  EXPECT_NE(message(resolve_canvas_size(0, 9).status()).find("positive"), std::string::npos);
  EXPECT_NE(message(resolve_canvas_size(750, 3001).status()).find("1:4 to 4:1"), std::string::npos);
  EXPECT_NE(message(reference_image_size(401, 100).status()).find("within 1:4 and 4:1"), std::string::npos);
  EXPECT_NE(message(reference_image_size(0, 100).status()).find("positive size"), std::string::npos);
  EXPECT_NE(message(cover_crop(10, 0, {96, 64}).status()).find("positive sizes"), std::string::npos);
  EXPECT_NE(message(align_num_frames(0).status()).find("must be positive"), std::string::npos);
}

TEST(FrameSlots, TheSameSourceFramesAsDiffusersFor25_30_60_12AndNtscRates) {
  const weights::Checkpoint g = open_golden("video");
  int checked = 0;
  for (const std::string& name : g.names()) {
    const std::string suffix = ".indices";
    if (name.rfind("slots.", 0) != 0 || name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string key = name.substr(0, name.size() - suffix.size());
    const double fps = get(g, key + ".fps").data<double>()[0];
    const Tensor counts = get(g, key + ".counts");
    const int64_t frames = counts.data<int64_t>()[0], num_frames = counts.data<int64_t>()[1];
    Expected<std::vector<int64_t>> indices = frame_indices_at_24fps(frames, fps);
    ASSERT_TRUE(indices.has_value());
    if (static_cast<int64_t>(indices->size()) > num_frames) indices->resize(num_frames);
    const Tensor expected = get(g, name);
    EXPECT_EQ(*indices, std::vector<int64_t>(expected.data<int64_t>(), expected.data<int64_t>() + expected.numel()))
        << name;
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

TEST(FrameSlots, BadRatesAreRefused) {
  for (double fps : {0.0, -24.0, double(NAN), double(INFINITY)}) {
    Expected<std::vector<int64_t>> r = frame_indices_at_24fps(10, fps);
    ASSERT_FALSE(r.has_value()) << fps;
    EXPECT_NE(r.status().message().find("positive frame rate"), std::string::npos) << r.status().message();
  }
}

TEST(ReferenceVideo, NormalizeMatchesDiffusersOnItsOwnCanvas) {
  const weights::Checkpoint g = open_golden("video");
  const Tensor in = get(g, "normalize.small.in");  // u8 [F, H, W, 3]
  io::VideoFrames video;
  video.frames = in.dim(0), video.height = in.dim(1), video.width = in.dim(2);
  video.rgb.assign(in.data<uint8_t>(), in.data<uint8_t>() + in.numel());
  Expected<io::VideoFrames> out = normalize_reference_video(video, 30.0, 124);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  const Tensor shape = get(g, "normalize.small.shape");
  EXPECT_EQ(out->frames, shape.data<int64_t>()[0]);
  EXPECT_EQ(out->height, shape.data<int64_t>()[1]);
  EXPECT_EQ(out->width, shape.data<int64_t>()[2]);
  EXPECT_EQ(fnv1a64(out->rgb.data(), out->rgb.size()), golden_hash(g, "normalize.small.fnv"));

  Expected<io::VideoFrames> bad = normalize_reference_video(video, 0.0, 124);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("positive frame rate"), std::string::npos);
  io::VideoFrames empty;
  EXPECT_FALSE(normalize_reference_video(empty, 30.0, 124).has_value());
}

// max |a - b| / max |b| and the relative L2 error, both in fp64.
std::pair<double, double> relative_errors(const Tensor& a, const Tensor& b) {
  double max_diff = 0, max_ref = 0, num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    max_diff = std::max(max_diff, std::abs(x - y));
    max_ref = std::max(max_ref, std::abs(y));
    num += (x - y) * (x - y);
    den += y * y;
  }
  return {max_diff / max_ref, std::sqrt(num / den)};
}

TEST(SincResample, WithinOneMillionthOfTorchaudioFrom44_48_22_16And8kHz) {
  const weights::Checkpoint g = open_golden("audio");
  int checked = 0;
  for (const std::string& name : g.names()) {
    if (name.rfind("resample.", 0) != 0 || name.size() < 3 || name.substr(name.size() - 3) != ".in") continue;
    const std::string key = name.substr(0, name.size() - 3);
    const int64_t rate = std::stoll(key.substr(9, key.find('.', 9) - 9));
    const Tensor in = get(g, name);
    const double max_seconds = get(g, key + ".max_duration").data<double>()[0];
    Expected<Tensor> out = normalize_reference_audio(in, rate, max_seconds);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    const Tensor expected = get(g, key + ".out");
    ASSERT_EQ(out->shape(), expected.shape()) << key;
    const auto [max_rel, rel_l2] = relative_errors(*out, expected);
    EXPECT_LE(max_rel, 1e-6) << key;
    EXPECT_LE(rel_l2, 1e-6) << key;
    std::printf("%s: max |diff| / max |ref| %.3g, rel L2 %.3g\n", key.c_str(), max_rel, rel_l2);
    if (has(g, key + ".torchaudio")) {  // the transform alone, untruncated
      Expected<Tensor> full = sinc_resample(in, rate, kAudioVaeRate);
      const Tensor ta = get(g, key + ".torchaudio");
      ASSERT_EQ(full->shape(), ta.shape());
      EXPECT_LE(relative_errors(*full, ta).first, 1e-6);
    }
    ++checked;
  }
  EXPECT_GE(checked, 6);
  const SincKernel k48 = *sinc_resample_kernel(48000, 32000);
  EXPECT_EQ(k48.orig, 3);
  EXPECT_EQ(k48.target, 2);
  const SincKernel k44 = *sinc_resample_kernel(44100, 32000);
  EXPECT_EQ(k44.orig, 441);
  EXPECT_EQ(k44.target, 320);
  EXPECT_EQ(k44.width, 9);  // ceil(6 * 441 / (320 * 0.99))
}

// torchaudio takes ceil() of the output length as an fp32 tensor: for 300044 samples at 22.05 kHz the
// exact 435438.0045 rounds to 435438.0 in fp32, and torchaudio keeps 435438 samples, not 435439
// (checked with torch 2.15 / torchaudio 2.11.1 when this test was written).
TEST(SincResample, OutputLengthRoundsThroughFp32AsTorchaudioDoes) {
  const Tensor x = Tensor::zeros({1, 300044}, DType::kF32);
  Expected<Tensor> y = sinc_resample(x, 22050, 32000);
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->dim(1), 435438);
  EXPECT_EQ(sinc_resample(Tensor::zeros({1, 441}, DType::kF32), 44100, 32000)->dim(1), 320);
}

TEST(ReferenceAudio, BadWaveformsAndRatesSayWhatToDo) {
  const Tensor three = Tensor::zeros({3, 100}, DType::kF32);
  Expected<Tensor> r = normalize_reference_audio(three, 48000, 5.0);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("mono or stereo"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("downmix"), std::string::npos);
  const Tensor mono = Tensor::zeros({1, 100}, DType::kF32);
  EXPECT_NE(normalize_reference_audio(mono, 0, 5.0).status().message().find("sample rate"), std::string::npos);
  EXPECT_NE(normalize_reference_audio(mono, 48000, 0.0).status().message().find("duration"), std::string::npos);
  const Tensor empty = Tensor::zeros({1, 0}, DType::kF32), flat = Tensor::zeros({100}, DType::kF32);
  EXPECT_NE(normalize_reference_audio(empty, 48000, 5.0).status().message().find("no samples"), std::string::npos);
  EXPECT_NE(normalize_reference_audio(flat, 48000, 5.0).status().message().find("[channels, samples]"),
            std::string::npos);
  EXPECT_NE(sinc_resample(mono, -1, 32000).status().message().find("positive"), std::string::npos);
}

TEST(ReferenceAudio, MonoBecomesStereoAndPaddingReachesWholeHops) {
  Tensor mono = Tensor::uninitialized({1, 1000}, DType::kF32);
  for (int i = 0; i < 1000; ++i) mono.data<float>()[i] = std::sin(0.01f * i);
  Expected<Tensor> stereo = normalize_reference_audio(mono, 32000, 1.0);  // no resample at 32 kHz
  ASSERT_TRUE(stereo.has_value());
  ASSERT_EQ(stereo->shape(), (Shape{2, 1000}));
  EXPECT_EQ(std::memcmp(stereo->data<float>(), stereo->data<float>() + 1000, 1000 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(stereo->data<float>(), mono.data<float>(), 1000 * sizeof(float)), 0);
  Expected<Tensor> cut = normalize_reference_audio(mono, 32000, 0.01);  // int(0.01 * 32000) = 320
  EXPECT_EQ(cut->dim(1), 320);
  Expected<Tensor> padded = pad_to_hop(*stereo);
  ASSERT_EQ(padded->shape(), (Shape{2, 1600}));
  EXPECT_EQ(padded->data<float>()[1600 + 999], stereo->data<float>()[1000 + 999]);
  for (int i = 1000; i < 1600; ++i) EXPECT_EQ(padded->data<float>()[i], 0.0f);
  EXPECT_EQ(pad_to_hop(*pad_to_hop(*stereo))->dim(1), 1600);
  EXPECT_NE(pad_to_hop(*stereo, 0).status().message().find("hop"), std::string::npos);
}

}  // namespace
}  // namespace orochi
