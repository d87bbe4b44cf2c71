// ref2va's text features on a tiny checkpoint against diffusers 0.42.1's MiniMaxH3Ref2VATextEncoderStep with its
// real conditioner call (tests/data/h3_ref2va_prompt, made by scripts/golden/make_h3_ref2va_prompt.py over
// transformers 5.24, with h3_fl2va_prompt's tiny Qwen3-VL): an image, a 26-frame video with sound (frames 0, 12, 24
// sampled at 2 fps, 2 blocks), an audio clip and a second image, in that order. The token ids and per-row DiT tags
// are the step's exactly; the features within relative L2 1e-5 (the Qwen3-VL mixed test's bound).
#include <gtest/gtest.h>

#include "pipeline/ref2va_prompt.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi::pipeline {
namespace {

using testing::golden_tensor;

// scripts/golden/make_h3_ref2va_prompt.py's PROMPT and LAYER.
constexpr const char* kPrompt =
    "The girl from picture 1 dances as in video 1, to the song of audio 2; she sings <d>我们走吧!</d> twice.";
constexpr int64_t kLayer = 2;

const weights::Checkpoint& golden() {
  static const weights::Checkpoint g = [] {
    Expected<weights::Checkpoint> c =
        weights::Checkpoint::open(testing::test_data_dir() + "/h3_ref2va_prompt/golden.safetensors");
    OROCHI_CHECK(c.has_value(), c.status().to_string());
    return std::move(c).value();
  }();
  return g;
}

std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
}

// The script's `pattern`: u8 [frames, height, width, 3].
std::vector<uint8_t> pattern(int64_t frames, int64_t height, int64_t width, int64_t salt) {
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(frames * height * width * 3));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        for (int64_t c = 0; c < 3; ++c)
          out.push_back(static_cast<uint8_t>((37 * f + 11 * y + 7 * x + 59 * c + (x * y) % 13 + 101 * salt) % 256));
  return out;
}

Ref2vaReference image(int64_t height, int64_t width, int64_t salt) {
  Ref2vaReference r;
  r.kind = ReferenceKind::kImage;
  r.image.height = height;
  r.image.width = width;
  r.image.rgb = pattern(1, height, width, salt);
  return r;
}

Tensor sound() { return Tensor::zeros({2, 1600}, DType::kF32); }

std::vector<Ref2vaReference> references() {
  Ref2vaReference video;
  video.kind = ReferenceKind::kVideo;
  video.frames.frames = 26;
  video.frames.height = 64;
  video.frames.width = 128;
  video.frames.rgb = pattern(26, 64, 128, 2);
  video.waveform = sound();
  Ref2vaReference clip;
  clip.kind = ReferenceKind::kAudio;
  clip.waveform = sound();
  std::vector<Ref2vaReference> refs;
  refs.push_back(image(64, 96, 1));
  refs.push_back(std::move(video));
  refs.push_back(std::move(clip));
  refs.push_back(image(96, 64, 3));
  return refs;
}

Ref2vaPromptInputs tiny_model() {
  const std::string dir = testing::test_data_dir() + "/h3_fl2va_prompt";
  Ref2vaPromptInputs m;
  m.tokenizer = testing::test_data_dir() + "/tokenizer/qwen_bpe";
  m.text_encoder = dir + "/text_encoder";
  m.processors.images = *image_processor_config(dir);
  m.processors.videos = *video_processor_config(dir);  // no video_preprocessor_config.json there: H3's
  m.layer = kLayer;
  return m;
}

TEST(Ref2vaPrompt, MatchesDiffusersTextEncoderStep) {
  Expected<PromptConditioning> c = encode_ref2va_prompt_cpu(tiny_model(), kPrompt, references());
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  const std::vector<int64_t> ids(c->token_ids.begin(), c->token_ids.end());
  EXPECT_EQ(ids, ints(golden_tensor(golden(), "token_ids")));
  EXPECT_EQ(c->tags, ints(golden_tensor(golden(), "text_token_tags")));
  const Tensor expected = golden_tensor(golden(), "prompt_embeds");  // f32 [L, 8]
  ASSERT_EQ(c->features.shape(), expected.shape());
  const testing::Comparison cmp = testing::compare(c->features, expected);
  std::printf("  prompt_embeds %s\n", cmp.summary().c_str());
  EXPECT_LE(cmp.rel_l2, 1e-5);
  // The check means something: 2 images of 6 tokens and 2 video blocks of 8, each with start and end.
  int64_t vision_rows = 0;
  for (const int64_t tag : c->tags) vision_rows += tag == kH3VideoTag;
  EXPECT_EQ(vision_rows, 2 * (6 + 2) + 2 * (8 + 2));
}

TEST(Ref2vaPrompt, InputsCarryBothModalitiesInRequestOrder) {
  const Ref2vaPromptInputs m = tiny_model();
  Expected<text::BpeTokenizer> tokenizer = text::BpeTokenizer::load(m.tokenizer);
  ASSERT_TRUE(tokenizer.has_value());
  Expected<ConditionerInputs> in = prepare_ref2va_prompt(*tokenizer, m.processors, kPrompt, references(), 512);
  ASSERT_TRUE(in.has_value()) << in.status().to_string();
  ASSERT_EQ(in->images.grids.size(), 2u);
  ASSERT_EQ(in->videos.grids.size(), 1u);
  EXPECT_EQ(in->videos.grids[0].t, 2);  // 3 sampled frames, the last repeated
  EXPECT_EQ(in->vision_patches(), 4 * 6 + 6 * 4 + 2 * 4 * 8);
  EXPECT_EQ(in->positions.shape(), (Shape{in->size(), 3}));
  // The video's frames change the features; the image's tokens stay where they were.
  std::vector<Ref2vaReference> dark = references();
  std::fill(dark[1].frames.rgb.begin(), dark[1].frames.rgb.end(), uint8_t{0});
  Expected<PromptConditioning> a = encode_ref2va_prompt_cpu(m, kPrompt, references());
  Expected<PromptConditioning> b = encode_ref2va_prompt_cpu(m, kPrompt, dark);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->token_ids, b->token_ids);
  EXPECT_GT(testing::compare(a->features, b->features).rel_l2, 1e-3);
}

TEST(Ref2vaPrompt, ClearErrors) {
  const Ref2vaPromptInputs m = tiny_model();
  Expected<PromptConditioning> empty = encode_ref2va_prompt_cpu(m, "", references());
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.status().message().find("prompt is empty"), std::string::npos);

  std::vector<Ref2vaReference> short_video = references();  // 12 frames: one sampled, two needed
  short_video[1].frames.frames = 12;
  short_video[1].frames.rgb.resize(static_cast<size_t>(12 * 64 * 128 * 3));
  Expected<PromptConditioning> too_short = encode_ref2va_prompt_cpu(m, kPrompt, short_video);
  ASSERT_FALSE(too_short.has_value());
  EXPECT_NE(too_short.status().message().find("reference 2 (a video of 12 frames"), std::string::npos)
      << too_short.status().to_string();

  Expected<text::BpeTokenizer> tokenizer = text::BpeTokenizer::load(m.tokenizer);
  ASSERT_TRUE(tokenizer.has_value());
  Expected<ConditionerInputs> long_one = prepare_ref2va_prompt(*tokenizer, m.processors, kPrompt, references(), 100);
  ASSERT_FALSE(long_one.has_value());
  EXPECT_NE(long_one.status().message().find("the ref2va presentation is"), std::string::npos)
      << long_one.status().to_string();

  Ref2vaPromptInputs patches = tiny_model();
  patches.processors.videos.patch_size = 14;
  Expected<PromptConditioning> mismatch = encode_ref2va_prompt_cpu(patches, kPrompt, references());
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.status().message().find("the video processor cuts 14 px"), std::string::npos)
      << mismatch.status().to_string();
}

}  // namespace
}  // namespace orochi::pipeline
