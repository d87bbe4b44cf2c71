// The presentations the full-size Qwen3-VL comparison runs (tests/support/qwen3vl_presentation.h):
// synthetic media through the real processor and the H3 presentation builder, their token counts,
// grids and positions; and the tiny model over the tiny presentation on the CPU (fp32) with the
// counter-based random weights of models/qwen3vl/random_weights.h. With
// OROCHI_QWEN3VL_TINY_DUMP=FILE set it writes that run as the dump
// scripts/device/compare_qwen3vl_presentation.py --tiny checks against transformers on the CPU
// (the weight mapping, ids, grids and DeepStack order of the full-size comparison).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/qwen3vl/random_weights.h"
#include "models/qwen3vl/rope_index.h"
#include "support/compare.h"
#include "support/paths.h"
#include "support/qwen3vl_presentation.h"
#include "text/tokenizer.h"

namespace orochi::testing {
namespace {

int64_t count(const Tensor& ids, int64_t id) {
  int64_t n = 0;
  for (int64_t i = 0; i < ids.numel(); ++i) n += ids.data<int64_t>()[i] == id;
  return n;
}

TEST(Qwen3VLPresentation, TinyCaseLayout) {
  Expected<PresentationCase> c = presentation_case("tiny");
  ASSERT_TRUE(c.has_value());
  Expected<BuiltPresentation> p = build_presentation(*c);
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  EXPECT_EQ(p->image_grids, (std::vector<qwen3vl::GridThw>{{1, 16, 20}, {1, 20, 16}}));
  // 26 frames at 24 fps sampled at 2 fps: frames 0, 12, 24, padded to 4: 2 blocks.
  EXPECT_EQ(p->video_grids, (std::vector<qwen3vl::GridThw>{{2, 8, 10}}));
  EXPECT_EQ(count(p->input_ids, 151655), 160);
  EXPECT_EQ(count(p->input_ids, 151656), 40);
  EXPECT_EQ(count(p->input_ids, 151652), 4);  // 2 images + 2 video blocks
  EXPECT_EQ(count(p->input_ids, 151653), 4);
  EXPECT_EQ(static_cast<int64_t>(p->vision_rows.size()), 200);
  EXPECT_EQ(p->pixel_values.shape(), (Shape{320 + 320 + 160, 1536}));
  EXPECT_EQ(p->image_patches, 640);
  EXPECT_EQ(p->positions.shape(), (Shape{p->size(), 3}));
  for (int64_t i = 0; i < p->size(); ++i) {
    const int64_t id = p->input_ids.data<int64_t>()[i];
    EXPECT_TRUE(id < 3011 || (id >= 151652 && id <= 151656)) << i << ": " << id;
  }
  EXPECT_EQ(presentation_case("nope").status().code(), ErrorCode::kNotFound);
}

TEST(Qwen3VLPresentation, TwoImagesAndA124FrameVideo) {
  Expected<BuiltPresentation> p = build_presentation(*presentation_case("ref2va-2img"));
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  EXPECT_EQ(p->image_grids, (std::vector<qwen3vl::GridThw>{{1, 48, 84}, {1, 48, 84}}));
  EXPECT_EQ(p->video_grids, (std::vector<qwen3vl::GridThw>{{6, 48, 84}}));  // 11 frames -> 6 blocks
  EXPECT_EQ(count(p->input_ids, 151655), 2 * 1008);
  EXPECT_EQ(count(p->input_ids, 151656), 6 * 1008);
  EXPECT_EQ(p->pixel_values.dim(0), 8 * 4032);
  EXPECT_LT(p->size(), 8064 + 200);
  // Identity sizes: no resampling, so every value is (u8 - 127.5) / 127.5.
  const float* v = p->pixel_values.data<float>();
  for (int64_t i = 0; i < 1000; ++i) {
    const float u = v[i * 997] * 127.5f + 127.5f;
    EXPECT_NEAR(u, std::round(u), 1e-3) << i;
  }
}

// The Python string literals between `PROMPT = (` and its `)` in peer_ref2va_preprocess.py, joined
// as Python joins adjacent literals (the peer's prompt is plain double-quoted text).
std::string peer_prompt() {
  std::ifstream f(test_data_dir() + "/../../scripts/device/peer_ref2va_preprocess.py");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string src = ss.str();
  const size_t start = src.find("\nPROMPT = (");
  if (start == std::string::npos) return "";
  const size_t end = src.find(')', start);
  std::string prompt;
  for (size_t i = src.find('"', start); i < end; i = src.find('"', i + 1)) {
    const size_t close = src.find('"', i + 1);
    prompt += src.substr(i + 1, close - i - 1);
    i = close;
  }
  return prompt;
}

// ref2va-bench is the presentation diffusers builds for issue 23's preprocessing comparison
// (scripts/device/peer_ref2va_preprocess.py, session 17 on the device: 28,217 tokens with the same
// test tokenizer), so the two sides' vision + text times are over the same sequence.
TEST(Qwen3VLPresentation, Ref2vaBenchIsThePeersRequest) {
  EXPECT_EQ(peer_prompt(), kRef2vaBenchPrompt) << "peer_ref2va_preprocess.py's PROMPT changed: update kRef2vaBenchPrompt";
  Expected<PresentationCase> c = presentation_case("ref2va-bench");
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  Expected<BuiltPresentation> p = build_presentation(*c);
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  // Pictures (W x H) 3648x2048, 2048x2048, 2048x2720, 3072x2048 in 16-px patches, one frame each.
  EXPECT_EQ(p->image_grids,
            (std::vector<qwen3vl::GridThw>{{1, 128, 228}, {1, 128, 128}, {1, 170, 128}, {1, 128, 192}}));
  // 120 frames at 24 fps sampled at 2 fps: frames 0, 12, ..., 108 (10), 5 blocks of 1344x768.
  EXPECT_EQ(p->video_grids, (std::vector<qwen3vl::GridThw>{{5, 48, 84}}));
  EXPECT_EQ(count(p->input_ids, 151655), 7296 + 4096 + 5440 + 6144);
  EXPECT_EQ(count(p->input_ids, 151656), 5 * 1008);
  EXPECT_EQ(count(p->input_ids, 151652), 4 + 5);
  EXPECT_EQ(count(p->input_ids, 151653), 4 + 5);
  EXPECT_EQ(static_cast<int64_t>(p->vision_rows.size()), 28016);
  EXPECT_EQ(p->pixel_values.dim(0), 4 * 28016);
  EXPECT_EQ(p->size(), 28217) << "diffusers' presentation of the same request has 28,217 tokens";
  EXPECT_GT(p->processor_s, 0.0);

  // The text between the vision blocks, segment by segment, as diffusers tokenizes it: the labels in
  // request order (the video's soundtrack is "<Audio 1>", the clip "<Audio 2>"), the block
  // timestamps, then the prompt.
  Expected<text::BpeTokenizer> tok = text::BpeTokenizer::load(test_data_dir() + "/tokenizer/qwen_bpe/tokenizer.json");
  ASSERT_TRUE(tok.has_value()) << tok.status().to_string();
  const std::vector<std::vector<std::string>> between = {
      {"<Picture 1>: "}, {"<Picture 2>: "}, {"<Picture 3>: "}, {"<Picture 4>: "},
      {"<Audio 1>: ", "<Video 1>: ", "<0.2 seconds>"}, {"<1.2 seconds>"}, {"<2.2 seconds>"}, {"<3.2 seconds>"},
      {"<4.2 seconds>"}, {"<Audio 2>: ", kRef2vaBenchPrompt}};
  std::vector<std::vector<int64_t>> runs(1);  // the text tokens before each vision block, and after the last
  const int64_t* ids = p->input_ids.data<int64_t>();
  for (int64_t i = 0; i < p->size(); ++i) {
    if (ids[i] == 151652) {
      while (i < p->size() && ids[i] != 151653) ++i;
      runs.emplace_back();
    } else {
      runs.back().push_back(ids[i]);
    }
  }
  ASSERT_EQ(runs.size(), between.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    std::vector<int64_t> expect;
    for (const std::string& segment : between[r]) {
      Expected<std::vector<int32_t>> e = tok->encode(segment);
      ASSERT_TRUE(e.has_value());
      expect.insert(expect.end(), e->begin(), e->end());
    }
    EXPECT_EQ(runs[r], expect) << "text run " << r;
  }
}

TEST(Qwen3VLPresentation, TinyModelOnTheCpu) {
  const BuiltPresentation p = *build_presentation(*presentation_case("tiny"));
  const qwen3vl::VisionConfig vc = tiny_vision_config();
  const qwen3vl::TextConfig tc = tiny_text_config();
  constexpr uint64_t kSeed = 7;
  constexpr int64_t kLayers = 4;
  const qwen3vl::VisionWeights vw = qwen3vl::random_vision_weights(vc, kSeed);
  const qwen3vl::TextWeights tw = qwen3vl::random_text_weights(tc, kLayers, kSeed);
  Expected<qwen3vl::VisionFeatures> f = qwen3vl::run_vision_tower(vw, p.pixel_values, p.grids());
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  const qwen3vl::VisionEmbeddings vision = presentation_vision(p, *f);
  Expected<Tensor> final_out = qwen3vl::encode_mixed(tw, p.input_ids, p.positions, vision);
  ASSERT_TRUE(final_out.has_value()) << final_out.status().to_string();
  qwen3vl::TextWeights two = tw;
  two.layers.resize(2);
  Expected<Tensor> after2 = qwen3vl::encode_mixed(two, p.input_ids, p.positions, vision);
  ASSERT_TRUE(after2.has_value()) << after2.status().to_string();
  double ss = 0;
  for (int64_t i = 0; i < final_out->numel(); ++i) {
    ASSERT_TRUE(std::isfinite(final_out->data<float>()[i]));
    ss += static_cast<double>(final_out->data<float>()[i]) * final_out->data<float>()[i];
  }
  const double rms = std::sqrt(ss / static_cast<double>(final_out->numel()));
  std::printf("tiny presentation: %lld tokens, %zu vision rows, output rms %.3f\n", static_cast<long long>(p.size()),
              p.vision_rows.size(), rms);
  EXPECT_GT(rms, 0.3);
  EXPECT_LT(rms, 30.0);

  if (const char* path = std::getenv("OROCHI_QWEN3VL_TINY_DUMP")) {
    const std::map<std::string, std::string> meta{{"case", "tiny"},
                                                  {"seed", std::to_string(kSeed)},
                                                  {"layers", std::to_string(kLayers)},
                                                  {"dtype", "f32"},
                                                  {"text_config", text_config_json(tc)},
                                                  {"vision_config", vision_config_json(vc)}};
    std::vector<std::pair<std::string, Tensor>> outputs = {
        {"hidden_2", *after2}, {"hidden_final", *final_out}, {"vision_features", f->features}};
    for (size_t k = 0; k < f->deepstack.size(); ++k) outputs.emplace_back("deepstack_" + std::to_string(k), f->deepstack[k]);
    ASSERT_TRUE(write_presentation_dump(path, &p, Tensor(), outputs, meta).is_ok());
    std::printf("wrote %s\n", path);
  }
}

}  // namespace
}  // namespace orochi::testing
