// A mixed text + 2 images + 1 video sequence through the Qwen3-VL text stack against transformers
// 5.24 (tests/data/qwen3vl_mixed, made by scripts/golden/make_qwen3vl_mixed.py over the tiny
// language model of tests/data/qwen3vl_text): get_rope_index's positions (exact), the vision
// features scattered at the pad rows, DeepStack features added after decoder layers 0..2, every
// hidden state and the last layer's raw output within relative L2 1e-5. The vision tower's outputs
// come from the golden, so this needs no vision tower.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "models/qwen3vl/rope_index.h"
#include "models/qwen3vl/text_model.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi::qwen3vl {
namespace {

using testing::golden_tensor;

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_mixed"; }
std::string model_dir() { return testing::test_data_dir() + "/qwen3vl_text/text_encoder"; }

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

std::vector<MmTokenType> token_types() {
  std::vector<MmTokenType> types;
  for (const int64_t v : ints(golden_tensor(golden(), "in.mm_token_type_ids")))
    types.push_back(static_cast<MmTokenType>(v));
  return types;
}

std::vector<GridThw> grids(const std::string& name) {
  const std::vector<int64_t> v = ints(golden_tensor(golden(), name));
  std::vector<GridThw> out;
  for (size_t i = 0; i + 2 < v.size(); i += 3) out.push_back({v[i], v[i + 1], v[i + 2]});
  return out;
}

// transformers' [3, L] -> ours [L, 3].
Tensor golden_positions() {
  const Tensor p = golden_tensor(golden(), "positions");
  const int64_t L = p.dim(1);
  Tensor out = Tensor::empty({L, 3}, DType::kI64);
  for (int64_t i = 0; i < L; ++i)
    for (int a = 0; a < 3; ++a) out.data<int64_t>()[i * 3 + a] = p.data<int64_t>()[a * L + i];
  return out;
}

VisionEmbeddings golden_vision(int64_t hidden) {
  std::vector<Tensor> image_ds, video_ds;
  for (int k = 0; k < 3; ++k) {
    image_ds.push_back(golden_tensor(golden(), "image_deepstack." + std::to_string(k)));
    video_ds.push_back(golden_tensor(golden(), "video_deepstack." + std::to_string(k)));
  }
  Expected<VisionEmbeddings> v =
      vision_embeddings(token_types(), hidden, golden_tensor(golden(), "image_features"), image_ds,
                        golden_tensor(golden(), "video_features"), video_ds);
  OROCHI_CHECK(v.has_value(), v.status().to_string());
  return std::move(v).value();
}

TEST(Qwen3VLMixed, RopeIndexMatchesTransformers) {
  Expected<Tensor> pos = rope_index(token_types(), grids("in.image_grid_thw"), grids("in.video_grid_thw"), 2);
  ASSERT_TRUE(pos.has_value()) << pos.status().to_string();
  EXPECT_EQ(ints(*pos), ints(golden_positions()));
}

TEST(Qwen3VLMixed, RopeIndexOfTextAloneIsTextPositions) {
  const std::vector<MmTokenType> text(7, MmTokenType::kText);
  Expected<Tensor> pos = rope_index(text, {}, {});
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(ints(*pos), ints(text_positions(7)));
}

TEST(Qwen3VLMixed, RopeIndexRefusesGridsThatDoNotMatchTheRuns) {
  const std::vector<MmTokenType> types = token_types();
  const std::vector<GridThw> images = grids("in.image_grid_thw"), videos = grids("in.video_grid_thw");
  Expected<Tensor> missing = rope_index(types, {images[0]}, videos);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find("no grid left"), std::string::npos) << missing.status().to_string();
  Expected<Tensor> swapped = rope_index(types, {images[1], images[0]}, videos);
  ASSERT_FALSE(swapped.has_value());
  EXPECT_NE(swapped.status().message().find("has 6 tokens but its grid (1, 6, 8) gives 12"), std::string::npos)
      << swapped.status().to_string();
  Expected<Tensor> extra = rope_index(types, {images[0], images[1], images[0]}, videos);
  ASSERT_FALSE(extra.has_value());
  EXPECT_NE(extra.status().message().find("every grid needs its pad run"), std::string::npos);
  Expected<Tensor> odd = rope_index({MmTokenType::kImage}, {{1, 3, 2}}, {});
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.status().message().find("does not merge"), std::string::npos);
}

struct MixedRun {
  std::map<std::string, Tensor> seen;
  Tensor out;
};

MixedRun run(int64_t stop_after_layers) {
  Expected<TextWeights> w = load_text_weights(model_dir(), stop_after_layers);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  MixedRun r;
  auto observer = [&](const std::string& name, const Tensor& t) { r.seen[name] = t.clone(); };
  Expected<Tensor> out = encode_mixed(*w, golden_tensor(golden(), "in.input_ids"), golden_positions(),
                                      golden_vision(w->config.hidden_size), observer);
  OROCHI_CHECK(out.has_value(), out.status().to_string());
  r.out = *out;
  return r;
}

void expect_close(const Tensor& ours, const std::string& golden_name) {
  const Tensor expected = golden_tensor(golden(), golden_name);
  SCOPED_TRACE(golden_name);
  EXPECT_TENSOR_CLOSE(ours, expected, 1e-5);
  std::printf("  %-18s %s\n", golden_name.c_str(), testing::compare(ours, expected).summary().c_str());
}

TEST(Qwen3VLMixed, HiddenStatesMatchTransformers) {
  const MixedRun r = run(3);  // hidden_states[3], as H3 reads hidden_states[50]
  expect_close(r.seen.at("rope.cos"), "rope.cos");
  expect_close(r.seen.at("rope.sin"), "rope.sin");
  for (int i = 0; i <= 3; ++i) expect_close(r.seen.at("hidden_states." + std::to_string(i)), "hidden_states." + std::to_string(i));
  // The returned stream is hidden_states[3]: layer 2's output before its DeepStack add.
  expect_close(r.out, "hidden_states.3");
}

TEST(Qwen3VLMixed, EveryDeepStackAddReachesTheLastLayer) {
  const MixedRun r = run(4);  // all 4 layers: the 3rd DeepStack add feeds layer 3
  expect_close(r.out, "layer_output.3");
  for (int i = 0; i <= 3; ++i) expect_close(r.seen.at("hidden_states." + std::to_string(i)), "hidden_states." + std::to_string(i));
}

TEST(Qwen3VLMixed, DeepStackAndFeaturesMatter) {
  // Without the DeepStack adds the last layer's output moves far from transformers': the adds are
  // not a no-op that the comparisons above could pass without.
  Expected<TextWeights> w = load_text_weights(model_dir(), 4);
  ASSERT_TRUE(w.has_value());
  VisionEmbeddings vision = golden_vision(w->config.hidden_size);
  vision.deepstack.clear();
  Expected<Tensor> out = encode_mixed(*w, golden_tensor(golden(), "in.input_ids"), golden_positions(), vision);
  ASSERT_TRUE(out.has_value());
  const double rel = testing::compare(*out, golden_tensor(golden(), "layer_output.3")).rel_l2;
  std::printf("  without DeepStack: rel L2 %.3e from transformers\n", rel);
  EXPECT_GT(rel, 1e-2);
}

TEST(Qwen3VLMixed, RefusesVisionThatDoesNotFitTheSequence) {
  const int64_t hidden = 64;
  const std::vector<MmTokenType> types = token_types();
  Expected<VisionEmbeddings> few = vision_embeddings(types, hidden, Tensor::empty({3, hidden}, DType::kF32), {},
                                                     golden_tensor(golden(), "video_features"), {});
  ASSERT_FALSE(few.has_value());
  EXPECT_NE(few.status().message().find("the image features must be float [18, 64]"), std::string::npos)
      << few.status().to_string();
  Expected<VisionEmbeddings> depth = vision_embeddings(
      types, hidden, golden_tensor(golden(), "image_features"), {golden_tensor(golden(), "image_deepstack.0")},
      golden_tensor(golden(), "video_features"), {});
  ASSERT_FALSE(depth.has_value());
  EXPECT_NE(depth.status().message().find("DeepStack"), std::string::npos);

  Expected<TextWeights> w = load_text_weights(model_dir(), 1);
  ASSERT_TRUE(w.has_value());
  VisionEmbeddings bad = golden_vision(hidden);
  bad.rows.back() = 1000;
  Expected<Tensor> out = encode_mixed(*w, golden_tensor(golden(), "in.input_ids"), golden_positions(), bad);
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.status().message().find("outside the 66-token sequence"), std::string::npos)
      << out.status().to_string();
}

}  // namespace
}  // namespace orochi::qwen3vl
