// fl2va's text features on a tiny checkpoint against diffusers 0.42.1's MiniMaxH3FL2VATextEncoderStep
// with its real conditioner call (tests/data/h3_fl2va_prompt, made by scripts/golden/
// make_h3_fl2va_prompt.py over transformers 5.24): two 96x128 canvas keyframes through the image
// processor of processor/preprocessor_config.json and the tiny tower, the presentation, the mixed
// sequence through the text stack, hidden_states[2]. The token ids and per-row DiT tags are the
// step's exactly; the features within the Qwen3-VL mixed test's relative L2 1e-5.
#include <gtest/gtest.h>


#include "pipeline/fl2va_prompt.h"
#include "pipeline/h3_presentation.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi::pipeline {
namespace {

using testing::golden_tensor;

// scripts/golden/make_h3_fl2va_prompt.py's PROMPT and LAYER.
constexpr const char* kPrompt = "A red kite climbs over the dunes; a boy shouts <d>再高一点!</d> and the wind hums.";
constexpr int64_t kLayer = 2;

std::string data_dir() { return testing::test_data_dir() + "/h3_fl2va_prompt"; }

const weights::Checkpoint& golden() {
  static const weights::Checkpoint g = [] {
    Expected<weights::Checkpoint> c = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
    OROCHI_CHECK(c.has_value(), c.status().to_string());
    return std::move(c).value();
  }();
  return g;
}

std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
}

io::RgbImage golden_image(const std::string& name) {
  const Tensor t = golden_tensor(golden(), name).contiguous();  // stored u8 [H, W, 3], read as f32
  io::RgbImage image;
  image.height = t.dim(0);
  image.width = t.dim(1);
  image.rgb.resize(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<uint8_t>(t.data<float>()[i]);
  return image;
}

Fl2vaPromptInputs tiny_model() {
  Expected<qwen3vl::VisionProcessorConfig> processor = image_processor_config(data_dir());
  OROCHI_CHECK(processor.has_value(), processor.status().to_string());
  Fl2vaPromptInputs m;
  m.tokenizer = testing::test_data_dir() + "/tokenizer/qwen_bpe";
  m.text_encoder = data_dir() + "/text_encoder";
  m.processor = *processor;
  m.layer = kLayer;
  return m;
}

TEST(Fl2vaPrompt, ProcessorConfigIsTheFoldersOrH3s) {
  const Fl2vaPromptInputs m = tiny_model();
  EXPECT_EQ(m.processor.min_pixels, 4096);
  EXPECT_EQ(m.processor.max_pixels, 16384);
  EXPECT_EQ(m.processor.patch_size, 16);
  Expected<qwen3vl::VisionProcessorConfig> none = image_processor_config(data_dir() + "/text_encoder");
  ASSERT_TRUE(none.has_value()) << none.status().to_string();
  EXPECT_EQ(none->min_pixels, qwen3vl::VisionProcessorConfig::h3_images().min_pixels);
}

TEST(Fl2vaPrompt, MatchesDiffusersTextEncoderStep) {
  Expected<PromptConditioning> c =
      encode_fl2va_prompt_cpu(tiny_model(), kPrompt, {golden_image("in.keyframe.0"), golden_image("in.keyframe.1")});
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  const std::vector<int64_t> ids(c->token_ids.begin(), c->token_ids.end());
  EXPECT_EQ(ids, ints(golden_tensor(golden(), "token_ids")));
  EXPECT_EQ(c->tags, ints(golden_tensor(golden(), "text_token_tags")));
  const Tensor expected = golden_tensor(golden(), "prompt_embeds");  // f32 [L, 8]
  ASSERT_EQ(c->features.shape(), expected.shape());
  const testing::Comparison cmp = testing::compare(c->features, expected);
  std::printf("  prompt_embeds %s\n", cmp.summary().c_str());
  EXPECT_LE(cmp.rel_l2, 1e-5);
  // The check means something: 24 of the 94 rows are vision rows carrying the tower's features.
  int64_t vision_rows = 0;
  for (const int64_t tag : c->tags) vision_rows += tag == kH3VideoTag;
  EXPECT_EQ(vision_rows, 2 * (12 + 2));
}

TEST(Fl2vaPrompt, KeyframesChangeTheFeatures) {
  // Same presentation, other pixels: the vision rows must differ (the tower's features reach them).
  io::RgbImage dark = golden_image("in.keyframe.0");
  std::fill(dark.rgb.begin(), dark.rgb.end(), uint8_t{0});
  Expected<PromptConditioning> a = encode_fl2va_prompt_cpu(tiny_model(), kPrompt, {golden_image("in.keyframe.0")});
  Expected<PromptConditioning> b = encode_fl2va_prompt_cpu(tiny_model(), kPrompt, {dark});
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->token_ids, b->token_ids);
  EXPECT_GT(testing::compare(a->features, b->features).rel_l2, 1e-3);
}

TEST(Fl2vaPrompt, ClearErrors) {
  Expected<PromptConditioning> empty = encode_fl2va_prompt_cpu(tiny_model(), "", {golden_image("in.keyframe.0")});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.status().message().find("prompt is empty"), std::string::npos);

  Fl2vaPromptInputs deep = tiny_model();
  deep.layer = 3;  // the tiny stack has 3 layers: hidden_states[3] would be the normed last one
  Expected<PromptConditioning> layer = encode_fl2va_prompt_cpu(deep, kPrompt, {golden_image("in.keyframe.0")});
  ASSERT_FALSE(layer.has_value());
  EXPECT_NE(layer.status().message().find("must be below that"), std::string::npos) << layer.status().to_string();

  Fl2vaPromptInputs patches = tiny_model();
  patches.processor.patch_size = 14;
  Expected<PromptConditioning> mismatch = encode_fl2va_prompt_cpu(patches, kPrompt, {golden_image("in.keyframe.0")});
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.status().message().find("processor/ folder of the same release"), std::string::npos)
      << mismatch.status().to_string();
}

}  // namespace
}  // namespace orochi::pipeline
