// H3's presentation of fl2va and ref2va requests to Qwen3-VL against diffusers' own text-encoder
// steps (tests/data/h3_presentation, made by scripts/golden/make_h3_presentation.py with the
// qwen_bpe test tokenizer): token ids, DiT tags, Qwen's token kinds, grids and decoded text
// identical, and rope_index's positions for them equal to transformers' get_rope_index; the 2 fps
// frame sampling and its "<x.x seconds>" labels; refusals.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "models/qwen3vl/processor.h"
#include "models/qwen3vl/rope_index.h"
#include "pipeline/h3_presentation.h"
#include "support/paths.h"

namespace orochi::pipeline {
namespace {

const nlohmann::json& golden() {
  static const nlohmann::json g = [] {
    std::ifstream in(testing::test_data_dir() + "/h3_presentation/golden.json");
    return nlohmann::json::parse(in);
  }();
  return g;
}

const text::BpeTokenizer& tokenizer() {
  static const text::BpeTokenizer t = [] {
    Expected<text::BpeTokenizer> loaded =
        text::BpeTokenizer::load(testing::test_data_dir() + "/tokenizer/qwen_bpe/tokenizer.json");
    if (!loaded) throw std::runtime_error(loaded.status().to_string());
    return std::move(loaded).value();
  }();
  return t;
}

std::vector<VisionGrid> grids_of(const nlohmann::json& j) {
  std::vector<VisionGrid> out;
  for (const auto& g : j) out.push_back({g[0].get<int64_t>(), g[1].get<int64_t>(), g[2].get<int64_t>()});
  return out;
}

void expect_matches(const Presentation& p, const nlohmann::json& want) {
  EXPECT_EQ(p.token_ids, want["token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(p.dit_tags, want["dit_tags"].get<std::vector<int64_t>>());
  std::vector<int64_t> kinds;
  for (const qwen3vl::MmTokenType k : p.kinds) kinds.push_back(static_cast<int64_t>(k));
  EXPECT_EQ(kinds, want["mm_token_type_ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(tokenizer().decode(p.token_ids), want["text"].get<std::string>());
  EXPECT_EQ(p.image_grids, grids_of(want["image_grids"]));
  if (want.contains("video_grids")) EXPECT_EQ(p.video_grids, grids_of(want["video_grids"]));
  // The M-RoPE positions Qwen3-VL gives the presentation (get_rope_index on the same tokens).
  Expected<Tensor> positions = qwen3vl::rope_index(p.kinds, p.image_grids, p.video_grids);
  ASSERT_TRUE(positions.has_value()) << positions.status().to_string();
  std::vector<std::vector<int64_t>> rows;
  for (int64_t i = 0; i < positions->dim(0); ++i)
    rows.push_back({positions->data<int64_t>()[3 * i], positions->data<int64_t>()[3 * i + 1],
                    positions->data<int64_t>()[3 * i + 2]});
  EXPECT_EQ(rows, want["positions"].get<std::vector<std::vector<int64_t>>>());
}

TEST(H3Presentation, SpecialTokensComeFromTheTokenizer) {
  Expected<VisionTokenIds> ids = vision_token_ids(tokenizer());
  ASSERT_TRUE(ids.has_value()) << ids.status().to_string();
  const auto& want = golden()["special_ids"];
  EXPECT_EQ(ids->vision_start, want["<|vision_start|>"].get<int32_t>());
  EXPECT_EQ(ids->vision_end, want["<|vision_end|>"].get<int32_t>());
  EXPECT_EQ(ids->image_pad, want["<|image_pad|>"].get<int32_t>());
  EXPECT_EQ(ids->video_pad, want["<|video_pad|>"].get<int32_t>());
}

TEST(H3Presentation, Fl2vaMatchesThePipeline) {
  const auto& want = golden()["fl2va"];
  Expected<Presentation> p =
      build_fl2va_presentation(tokenizer(), golden()["prompt"].get<std::string>(), grids_of(want["image_grids"]));
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  expect_matches(*p, want);
  EXPECT_TRUE(p->video_grids.empty());
}

TEST(H3Presentation, Ref2vaMatchesThePipeline) {
  const auto& want = golden()["ref2va"];
  const std::vector<VisionGrid> images = grids_of(want["image_grids"]), videos = grids_of(want["video_grids"]);
  std::vector<PresentationReference> refs;
  size_t image = 0, video = 0;
  for (const auto& r : want["references"]) {
    PresentationReference ref;
    ref.has_audio = r["has_audio"].get<bool>();
    const std::string kind = r["kind"];
    if (kind == "image") {
      ref.kind = PresentationReference::Kind::kImage;
      ref.grid = images.at(image++);
    } else if (kind == "video") {
      ref.kind = PresentationReference::Kind::kVideo;
      ref.block_timestamps = want["video_block_timestamps"].at(video).get<std::vector<double>>();
      ref.grid = videos.at(video++);
    } else {
      ref.kind = PresentationReference::Kind::kAudio;
    }
    refs.push_back(ref);
  }
  Expected<Presentation> p = build_ref2va_presentation(tokenizer(), golden()["prompt"].get<std::string>(), refs);
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  expect_matches(*p, want);
}

TEST(H3Presentation, VideoSamplingAndLabelsMatchThePipeline) {
  for (const auto& c : golden()["video_sampling"]) {
    SCOPED_TRACE(c.dump());
    Expected<qwen3vl::SampledVideoFrames> s = qwen3vl::sample_video_frames(
        c["num_frames"].get<int64_t>(), c["fps"].get<double>(), c["sample_fps"].get<double>(), 2);
    ASSERT_TRUE(s.has_value()) << s.status().to_string();
    EXPECT_EQ(s->frame_indices, c["frame_indices"].get<std::vector<int64_t>>());
    EXPECT_EQ(s->block_timestamps, c["block_timestamps"].get<std::vector<double>>());  // bit-equal doubles
    std::vector<std::string> labels;
    for (const double ts : s->block_timestamps) labels.push_back(timestamp_label(ts));
    EXPECT_EQ(labels, c["labels"].get<std::vector<std::string>>());
  }
  // Round half to even on the binary value, as Python's format does.
  EXPECT_EQ(timestamp_label(0.25), "<0.2 seconds>");
  EXPECT_EQ(timestamp_label(0.75), "<0.8 seconds>");
  EXPECT_EQ(timestamp_label(5.0), "<5.0 seconds>");
}

TEST(H3Presentation, T2vaIsThePromptAlone) {
  const std::string prompt = golden()["prompt"];
  Expected<Presentation> p = build_t2va_presentation(tokenizer(), prompt);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->token_ids, *tokenizer().encode(prompt));
  EXPECT_EQ(p->dit_tags, std::vector<int64_t>(p->token_ids.size(), kH3TextTag));
}

TEST(H3Presentation, RefusesWhatThePipelineCannotPresent) {
  Expected<qwen3vl::SampledVideoFrames> s = qwen3vl::sample_video_frames(12);  // 1 frame sampled at 2 fps
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.status().message().find("at least 13 frames"), std::string::npos) << s.status().to_string();

  PresentationReference video;
  video.kind = PresentationReference::Kind::kVideo;
  video.grid = {3, 4, 6};
  video.block_timestamps = {0.25, 1.25};
  Expected<Presentation> p = build_ref2va_presentation(tokenizer(), "x", {video});
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.status().message().find("3 vision blocks but 2 block timestamps"), std::string::npos);

  Expected<Presentation> odd = build_fl2va_presentation(tokenizer(), "x", {{1, 5, 4}});
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.status().message().find("multiples of the merge size"), std::string::npos);

  EXPECT_FALSE(build_t2va_presentation(tokenizer(), "").has_value());

  // A tokenizer without Qwen's vision tokens (the test tokenizer with them taken out) cannot
  // present an image.
  std::ifstream in(testing::test_data_dir() + "/tokenizer/qwen_bpe/tokenizer.json");
  nlohmann::json spec = nlohmann::json::parse(in);
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& t : spec["added_tokens"])
    if (t["content"].get<std::string>().find("<|vision") == std::string::npos) kept.push_back(t);
  spec["added_tokens"] = kept;
  Expected<text::BpeTokenizer> plain = text::BpeTokenizer::from_json(spec.dump(), "no-vision");
  ASSERT_TRUE(plain.has_value()) << plain.status().to_string();
  Expected<Presentation> no_ids = build_fl2va_presentation(*plain, "a", {{1, 2, 2}});
  ASSERT_FALSE(no_ids.has_value());
  EXPECT_NE(no_ids.status().message().find("<|vision_start|>"), std::string::npos);
}

}  // namespace
}  // namespace orochi::pipeline
