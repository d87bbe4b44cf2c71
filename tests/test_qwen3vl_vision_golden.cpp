// The Qwen3-VL vision tower against transformers 5.24 on a tiny random model (fp32, made by
// scripts/golden/make_qwen3vl_vision.py): two images of different sizes and a 2-block video in one
// call (four attention segments), every intermediate within relative L2 1e-5: patch embedding,
// interpolated positions, rotary tables, each block, the three DeepStack mergers and the merger.
#include <gtest/gtest.h>

#include <map>

#include "models/qwen3vl/vision_layout.h"
#include "models/qwen3vl/vision_model.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using qwen3vl::GridThw;

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_vision"; }

weights::Checkpoint open_golden() {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

std::vector<GridThw> golden_grids(const weights::Checkpoint& g) {
  const Tensor t = testing::golden_tensor(g, "in.grid_thw");
  std::vector<GridThw> grids;
  for (int64_t i = 0; i < t.dim(0); ++i) {
    const int64_t* p = t.data<int64_t>() + 3 * i;
    grids.push_back({p[0], p[1], p[2]});
  }
  return grids;
}

qwen3vl::VisionWeights load() {
  Expected<qwen3vl::VisionWeights> w = qwen3vl::load_vision_weights(data_dir() + "/text_encoder");
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

TEST(Qwen3VLVisionGolden, ConfigAndWeightsLoad) {
  const qwen3vl::VisionWeights w = load();
  EXPECT_EQ(w.prefix, "model.visual.");
  EXPECT_EQ(w.config.depth, 4);
  EXPECT_EQ(w.config.hidden_size, 16);
  EXPECT_EQ(w.config.out_hidden_size, 32);
  EXPECT_EQ(w.config.position_grid_side(), 6);
  EXPECT_EQ(w.config.deepstack_visual_indexes, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(w.loaded_keys, qwen3vl::vision_weight_keys("model.visual.", w.config));
  for (const std::string& k : w.loaded_keys) EXPECT_EQ(k.find("language_model"), std::string::npos) << k;
}

TEST(Qwen3VLVisionGolden, EveryStageMatchesTransformers) {
  const weights::Checkpoint g = open_golden();
  const qwen3vl::VisionWeights w = load();
  const std::vector<GridThw> grids = golden_grids(g);
  ASSERT_EQ(grids.size(), 3u);
  EXPECT_EQ(qwen3vl::attention_segments(grids), (std::vector<int64_t>{96, 32, 48, 48}));

  std::map<std::string, Tensor> seen;
  auto observer = [&](const std::string& name, const Tensor& t) { seen[name] = t.clone(); };
  Expected<qwen3vl::VisionFeatures> out =
      qwen3vl::run_vision_tower(w, testing::golden_tensor(g, "in.pixel_values"), grids, observer);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();

  std::vector<std::string> names = {"patch_embed", "pos_embed", "rope.cos", "rope.sin", "merger"};
  for (int i = 0; i < w.config.depth; ++i) names.push_back("blocks." + std::to_string(i));
  for (size_t k = 0; k < w.config.deepstack_visual_indexes.size(); ++k) names.push_back("deepstack." + std::to_string(k));
  for (const std::string& name : names) {
    auto it = seen.find(name);
    ASSERT_NE(it, seen.end()) << "the forward never produced " << name;
    const Tensor expected = testing::golden_tensor(g, name);
    SCOPED_TRACE(name);
    EXPECT_TENSOR_CLOSE(it->second, expected, 1e-5);
    std::printf("  %-12s %s\n", name.c_str(), testing::compare(it->second, expected).summary().c_str());
  }
  EXPECT_EQ(seen.size(), names.size()) << "unexpected extra observations";

  // The returned tensors are the observed ones: M = 96/4 + 32/4 + 96/4 tokens of out_hidden.
  EXPECT_EQ(out->features.shape(), (Shape{56, 32}));
  EXPECT_TENSOR_CLOSE(out->features, testing::golden_tensor(g, "merger"), 1e-5);
  ASSERT_EQ(out->deepstack.size(), 3u);
  for (size_t k = 0; k < 3; ++k)
    EXPECT_TENSOR_CLOSE(out->deepstack[k], testing::golden_tensor(g, "deepstack." + std::to_string(k)), 1e-5);
  // transformers' own bf16 run is within a few 1e-3 of fp32: the GPU path's target distance.
  const testing::Comparison bf16 = testing::compare(testing::golden_tensor(g, "bf16.merger"), out->features);
  std::printf("  transformers bf16 vs our fp32 merger: %s\n", bf16.summary().c_str());
  EXPECT_LT(bf16.rel_l2, 2e-2);
}

TEST(Qwen3VLVisionGolden, AttentionStaysInsideEachSegment) {
  // The first image alone gives the same rows as inside the batch.
  const weights::Checkpoint g = open_golden();
  const qwen3vl::VisionWeights w = load();
  const std::vector<GridThw> grids = golden_grids(g);
  const Tensor pixels = testing::golden_tensor(g, "in.pixel_values");
  Expected<qwen3vl::VisionFeatures> alone =
      qwen3vl::run_vision_tower(w, pixels.slice(0, 0, qwen3vl::patch_count(grids[0])).contiguous(), {grids[0]});
  ASSERT_TRUE(alone.has_value()) << alone.status().to_string();
  const Tensor expected = testing::golden_tensor(g, "merger").slice(0, 0, qwen3vl::token_count(grids[0], 2)).contiguous();
  EXPECT_TENSOR_CLOSE(alone->features, expected, 1e-5);
}

TEST(Qwen3VLVisionGolden, Bf16PixelValuesAreAccepted) {
  const weights::Checkpoint g = open_golden();
  const qwen3vl::VisionWeights w = load();
  const Tensor pixels = testing::golden_tensor(g, "in.pixel_values").to(DType::kBF16);
  Expected<qwen3vl::VisionFeatures> out = qwen3vl::run_vision_tower(w, pixels, golden_grids(g));
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_TENSOR_CLOSE(out->features, testing::golden_tensor(g, "merger"), 2e-2);
}

}  // namespace
}  // namespace orochi
