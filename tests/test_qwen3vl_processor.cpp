// Qwen3-VL's image/video processors against transformers 5.24's torchvision backend (made by
// scripts/golden/make_qwen3vl_vision.py): the uint8 bicubic antialiased resize bit-exact (down and
// up), the pixel values and grids of 3 images and an odd-length video (rel L2 <= 1e-6; the fused
// normalize is exact up to fp32 rounding), smart_resize with MiniMax-H3's real limits, and the
// pipeline's 2 fps frame sampling and block timestamps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/qwen3vl/processor.h"
#include "models/qwen3vl/processor_resize.h"
#include "support/compare.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

using qwen3vl::GridThw;
using qwen3vl::RgbView;
using qwen3vl::VisionProcessorConfig;

const weights::Checkpoint& golden() {
  static const weights::Checkpoint g = [] {
    Expected<weights::Checkpoint> c =
        weights::Checkpoint::open(testing::test_data_dir() + "/qwen3vl_vision/processor.safetensors");
    OROCHI_CHECK(c.has_value(), c.status().to_string());
    return std::move(c).value();
  }();
  return g;
}

Tensor get(const std::string& name) {
  Expected<Tensor> t = golden().get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return t->contiguous();
}

RgbView view_of(const Tensor& hwc) {
  OROCHI_CHECK(hwc.dtype() == DType::kU8 && hwc.ndim() == 3 && hwc.dim(2) == 3, hwc.describe());
  return {static_cast<const uint8_t*>(hwc.raw_data()), hwc.dim(0), hwc.dim(1)};
}

// The golden's processors: patch 4 (factor 8), small pixel limits, H3's mean = std = 0.5.
VisionProcessorConfig image_config() {
  VisionProcessorConfig c;
  c.patch_size = 4;
  c.min_pixels = 400;
  c.max_pixels = 1920;
  return c;
}
VisionProcessorConfig video_config() {
  VisionProcessorConfig c = image_config();
  c.min_pixels = 256;
  c.max_pixels = 4 * 24 * 32;
  return c;
}

std::vector<GridThw> grids_of(const Tensor& t) {
  std::vector<GridThw> g;
  for (int64_t i = 0; i < t.dim(0); ++i) {
    const int64_t* p = t.data<int64_t>() + 3 * i;
    g.push_back({p[0], p[1], p[2]});
  }
  return g;
}

void expect_same_bytes(const std::vector<uint8_t>& ours, const Tensor& theirs) {
  ASSERT_EQ(static_cast<int64_t>(ours.size()), theirs.numel());
  const uint8_t* p = static_cast<const uint8_t*>(theirs.raw_data());
  int64_t differ = 0, first = -1;
  for (size_t i = 0; i < ours.size(); ++i)
    if (ours[i] != p[i]) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++differ;
    }
  EXPECT_EQ(differ, 0) << "first differing byte " << first << ": " << (first >= 0 ? int(ours[first]) : 0) << " vs "
                       << (first >= 0 ? int(p[first]) : 0);
}

TEST(Qwen3VLProcessor, ResizeIsBitExactWithTorchvision) {
  for (int i : {0, 2}) {
    SCOPED_TRACE("image " + std::to_string(i));
    const Tensor in = get("in.image." + std::to_string(i));
    const Tensor expected = get("resized.image." + std::to_string(i));
    expect_same_bytes(qwen3vl::resize_rgb_bicubic_antialias(static_cast<const uint8_t*>(in.raw_data()), in.dim(0),
                                                            in.dim(1), expected.dim(0), expected.dim(1)),
                      expected);
  }
  const Tensor video = get("in.video"), expected = get("resized.video");
  for (int64_t f = 0; f < video.dim(0); ++f) {
    SCOPED_TRACE("video frame " + std::to_string(f));
    const Tensor frame = video.slice(0, f, f + 1).view({video.dim(1), video.dim(2), 3});
    const Tensor want = expected.slice(0, f, f + 1).contiguous().view({expected.dim(1), expected.dim(2), 3});
    expect_same_bytes(qwen3vl::resize_rgb_bicubic_antialias(static_cast<const uint8_t*>(frame.raw_data()),
                                                            frame.dim(0), frame.dim(1), want.dim(0), want.dim(1)),
                      want);
  }
}

TEST(Qwen3VLProcessor, ImagesMatchTransformers) {
  const std::vector<Tensor> images = {get("in.image.0"), get("in.image.1"), get("in.image.2")};
  std::vector<RgbView> views;
  for (const Tensor& t : images) views.push_back(view_of(t));
  Expected<qwen3vl::VisionInputs> out = qwen3vl::process_images(views, image_config());
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_EQ(out->grids, grids_of(get("images.grid_thw")));
  const Tensor expected = get("images.pixel_values");
  EXPECT_TENSOR_CLOSE(out->pixel_values, expected, 1e-6);
  std::printf("  images: %s\n", testing::compare(out->pixel_values, expected).summary().c_str());
  // Token counts follow the grids: an image of (8p x 12p) patches is 4 x 6 merged tokens.
  EXPECT_EQ(qwen3vl::token_count(out->grids[0], 2), 24);
}

TEST(Qwen3VLProcessor, GeneralMeanAndStdMatchTheFusedNormalize) {
  VisionProcessorConfig c = image_config();
  c.image_mean = {0.48145466, 0.4578275, 0.40821073};  // OpenAI CLIP's
  c.image_std = {0.26862954, 0.26130258, 0.27577711};
  const Tensor image = get("in.image.2");
  Expected<qwen3vl::VisionInputs> out = qwen3vl::process_images({view_of(image)}, c);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_TENSOR_CLOSE(out->pixel_values, get("clip.pixel_values"), 1e-6);
}

TEST(Qwen3VLProcessor, OddLengthVideoMatchesTransformers) {
  const Tensor video = get("in.video");
  std::vector<RgbView> frames;
  for (int64_t f = 0; f < video.dim(0); ++f)
    frames.push_back({static_cast<const uint8_t*>(video.raw_data()) + f * video.dim(1) * video.dim(2) * 3,
                      video.dim(1), video.dim(2)});
  Expected<qwen3vl::VisionInputs> out = qwen3vl::process_videos({frames}, video_config());
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_EQ(out->grids, grids_of(get("videos.grid_thw")));
  EXPECT_EQ(out->grids[0].t, 2);  // 3 frames: the last is repeated into a second pair
  const Tensor expected = get("videos.pixel_values");
  EXPECT_TENSOR_CLOSE(out->pixel_values, expected, 1e-6);
  std::printf("  video: %s\n", testing::compare(out->pixel_values, expected).summary().c_str());
}

TEST(Qwen3VLProcessor, SmartResizeWithH3LimitsMatchesTransformers) {
  const Tensor sizes = get("smart_resize.sizes"), frames = get("smart_resize.frames");
  const Tensor image = get("smart_resize.image"), video = get("smart_resize.video");
  const VisionProcessorConfig ic = VisionProcessorConfig::h3_images(), vc = VisionProcessorConfig::h3_videos();
  for (int64_t i = 0; i < sizes.dim(0); ++i) {
    const int64_t h = sizes.data<int64_t>()[2 * i], w = sizes.data<int64_t>()[2 * i + 1];
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
    auto r = qwen3vl::smart_resize_image(h, w, ic);
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    EXPECT_EQ(r->first, image.data<int64_t>()[2 * i]);
    EXPECT_EQ(r->second, image.data<int64_t>()[2 * i + 1]);
    for (int64_t f = 0; f < frames.numel(); ++f) {
      const int64_t n = frames.data<int64_t>()[f];
      auto v = qwen3vl::smart_resize_video(n, h, w, vc);
      ASSERT_TRUE(v.has_value()) << v.status().to_string();
      const int64_t* want = video.data<int64_t>() + (f * sizes.dim(0) + i) * 2;
      EXPECT_EQ(v->first, want[0]) << n << " frames";
      EXPECT_EQ(v->second, want[1]) << n << " frames";
    }
  }
  // REF2VA §4.1: every legal reference is an identity; a 1344x768 keyframe gives 1008 tokens.
  auto k = qwen3vl::smart_resize_image(768, 1344, ic);
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(qwen3vl::token_count(GridThw{1, k->first / 16, k->second / 16}, 2), 1008);
}

TEST(Qwen3VLProcessor, FrameSamplingMatchesThePipeline) {
  for (int64_t n : {13, 14, 24, 25, 124, 125, 300, 345}) {
    SCOPED_TRACE(std::to_string(n) + " frames");
    Expected<qwen3vl::SampledVideoFrames> s = qwen3vl::sample_video_frames(n);
    ASSERT_TRUE(s.has_value()) << s.status().to_string();
    const Tensor idx = get("sample." + std::to_string(n) + ".indices");
    const Tensor ts = get("sample." + std::to_string(n) + ".timestamps");
    ASSERT_EQ(static_cast<int64_t>(s->frame_indices.size()), idx.numel());
    for (int64_t i = 0; i < idx.numel(); ++i) EXPECT_EQ(s->frame_indices[i], idx.data<int64_t>()[i]);
    ASSERT_EQ(static_cast<int64_t>(s->block_timestamps.size()), ts.numel());
    for (int64_t i = 0; i < ts.numel(); ++i) EXPECT_EQ(s->block_timestamps[i], ts.data<double>()[i]);
  }
  EXPECT_FALSE(qwen3vl::sample_video_frames(12).has_value());  // one sampled frame cannot make a pair
}

TEST(Qwen3VLProcessor, ConfigFromJson) {
  const auto j = nlohmann::json::parse(R"({"size": {"shortest_edge": 4096, "longest_edge": 25165824},
      "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
      "image_std": [0.5, 0.5, 0.5], "resample": 3, "do_resize": true, "rescale_factor": 0.00392156862745098})");
  Expected<VisionProcessorConfig> c = VisionProcessorConfig::from_json(j, VisionProcessorConfig::h3_images());
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->min_pixels, 4096);
  EXPECT_EQ(c->max_pixels, 25165824);
  EXPECT_EQ(VisionProcessorConfig::from_json(nlohmann::json::parse(R"({"resample": 2})"), *c).status().code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(VisionProcessorConfig::from_json(nlohmann::json::parse(R"({"patch_size": "16"})"), *c).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(VisionProcessorConfig::from_json(nlohmann::json::parse(R"({"image_std": [0.5, 0]})"), *c).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(Qwen3VLProcessor, BadInputsAreRefused) {
  const VisionProcessorConfig c = VisionProcessorConfig::h3_images();
  std::vector<uint8_t> pixels(64 * 64 * 3, 7);
  EXPECT_EQ(qwen3vl::process_images({}, c).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(qwen3vl::process_images({{nullptr, 64, 64}}, c).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(qwen3vl::process_images({{pixels.data(), 0, 64}}, c).status().code(), ErrorCode::kInvalidArgument);
  const Status wide = qwen3vl::process_images({{pixels.data(), 1, 300}}, c).status();
  EXPECT_EQ(wide.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wide.message().find("aspect ratio"), std::string::npos) << wide.to_string();
  const VisionProcessorConfig vc = VisionProcessorConfig::h3_videos();
  EXPECT_EQ(qwen3vl::process_videos({{{pixels.data(), 64, 64}}}, vc).status().code(), ErrorCode::kInvalidArgument);
  const Status sizes = qwen3vl::process_videos({{{pixels.data(), 64, 64}, {pixels.data(), 32, 64}}}, vc).status();
  EXPECT_EQ(sizes.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(sizes.message().find("one size"), std::string::npos) << sizes.to_string();
  EXPECT_EQ(qwen3vl::process_videos({}, vc).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace orochi
